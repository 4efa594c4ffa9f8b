// Helpers for GGUF tests: a raw little-endian byte builder (independent of
// GgufWriter, so that malformed files can be spelled out field by field) and
// GgufValue constructors.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "model/gguf.h"

namespace clm::test {

class GgufBytes {
 public:
  GgufBytes& raw(std::string_view s) {
    for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return put(v); }
  GgufBytes& u32(uint32_t v) { return put(v); }
  GgufBytes& u64(uint64_t v) { return put(v); }
  GgufBytes& str(std::string_view s) {
    u64(s.size());
    return raw(s);
  }
  // Magic, version and the two counts.
  GgufBytes& header(uint64_t tensor_count, uint64_t kv_count, uint32_t version = 3) {
    return raw("GGUF").u32(version).u64(tensor_count).u64(kv_count);
  }
  GgufBytes& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(GgufValueType::UINT32)).u32(v);
  }
  GgufBytes& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(static_cast<uint32_t>(GgufValueType::STRING)).str(v);
  }
  GgufBytes& tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type,
                         uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(std::size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
  }
  GgufBytes& zeros(std::size_t n) {
    bytes_.insert(bytes_.end(), n, std::byte{0});
    return *this;
  }
  std::size_t size() const { return bytes_.size(); }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  template <class T>
  GgufBytes& put(T v) {
    // Appending a bit_cast array rather than resize + memcpy: GCC 12 warns
    // falsely (-Wstringop-overflow) on the latter once inlined.
    const auto raw_bytes = std::bit_cast<std::array<std::byte, sizeof(T)>>(v);
    bytes_.insert(bytes_.end(), raw_bytes.begin(), raw_bytes.end());
    return *this;
  }
  std::vector<std::byte> bytes_;
};

inline GgufValue uint_value(GgufValueType t, uint64_t v) { return GgufValue{t, v}; }
inline GgufValue int_value(GgufValueType t, int64_t v) { return GgufValue{t, v}; }
inline GgufValue float_value(GgufValueType t, double v) { return GgufValue{t, v}; }
inline GgufValue bool_value(bool v) { return GgufValue{GgufValueType::BOOL, v}; }
inline GgufValue string_value(std::string_view v) { return GgufValue{GgufValueType::STRING, v}; }
inline GgufValue array_value(GgufValueType elem, std::vector<GgufValue> items) {
  auto a = std::make_shared<GgufArray>();
  a->elem_type = elem;
  a->items = std::move(items);
  return GgufValue{GgufValueType::ARRAY, std::move(a)};
}

// Deep equality of two values: same type, same held value, same items.
inline bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type || a.value.index() != b.value.index()) return false;
  if (a.type != GgufValueType::ARRAY) {
    if (const auto* d = std::get_if<double>(&a.value)) {
      const double e = std::get<double>(b.value);
      return std::memcmp(d, &e, sizeof e) == 0;  // bitwise, so NaN payloads count too
    }
    return a.value == b.value;
  }
  const auto& x = *std::get<std::shared_ptr<GgufArray>>(a.value);
  const auto& y = *std::get<std::shared_ptr<GgufArray>>(b.value);
  if (x.elem_type != y.elem_type || x.items.size() != y.items.size()) return false;
  for (std::size_t i = 0; i < x.items.size(); ++i)
    if (!same_value(x.items[i], y.items[i])) return false;
  return true;
}

}  // namespace clm::test
