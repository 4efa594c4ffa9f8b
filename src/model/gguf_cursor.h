// A bounds-checked little-endian reader over a byte span, internal to the
// GGUF parser. Every read checks the remaining length before touching a byte;
// a failed read is an error saying what was read, at which byte, and how
// many bytes remained. The cursor never allocates.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "util/error.h"

namespace clm::gguf_detail {

// GGUF is little-endian; reading by memcpy is only correct on such hosts.
static_assert(std::endian::native == std::endian::little, "GGUF reading assumes a little-endian host");

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  template <class T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T))
      return fail(std::string(what) + " needs " + std::to_string(sizeof(T)) + " bytes at byte " +
                  std::to_string(pos_) + ", only " + std::to_string(remaining()) + " remain");
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  // A GGUF string: uint64 length, then that many bytes (no terminator). The
  // view points into the underlying bytes.
  Result<std::string_view> read_string(std::string_view what) {
    const uint64_t at = pos_;
    auto len = read<uint64_t>(std::string(what) + " length");
    if (!len) return std::unexpected(len.error());
    if (*len > remaining())
      return fail(std::string(what) + " at byte " + std::to_string(at) + ": string length " +
                  std::to_string(*len) + " exceeds remaining " + std::to_string(remaining()) + " bytes");
    const auto* p = reinterpret_cast<const char*>(bytes_.data() + pos_);
    pos_ += *len;
    return std::string_view(p, static_cast<std::size_t>(*len));
  }

  Status skip(uint64_t n, std::string_view what) {
    if (n > remaining())
      return fail(std::string(what) + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(pos_) +
                  ", only " + std::to_string(remaining()) + " remain");
    pos_ += n;
    return {};
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace clm::gguf_detail
