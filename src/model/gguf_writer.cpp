#include "model/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_set>
#include <utility>

namespace clm {

namespace {

static_assert(std::endian::native == std::endian::little, "GGUF writing assumes a little-endian host");

constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

template <class T>
void put(std::vector<std::byte>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void put_type(std::vector<std::byte>& out, GgufValueType t) { put<uint32_t>(out, static_cast<uint32_t>(t)); }

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

template <class T>
Status put_checked_int(std::vector<std::byte>& out, const GgufValue& v) {
  if constexpr (std::is_signed_v<T>) {
    const auto* held = std::get_if<int64_t>(&v.value);
    if (held == nullptr) return fail("signed integer value not held as int64");
    if (*held < std::numeric_limits<T>::min() || *held > std::numeric_limits<T>::max())
      return fail("value " + std::to_string(*held) + " does not fit " +
                  std::string(gguf_value_type_name(v.type)));
    put<T>(out, static_cast<T>(*held));
  } else {
    const auto* held = std::get_if<uint64_t>(&v.value);
    if (held == nullptr) return fail("unsigned integer value not held as uint64");
    if (*held > std::numeric_limits<T>::max())
      return fail("value " + std::to_string(*held) + " does not fit " +
                  std::string(gguf_value_type_name(v.type)));
    put<T>(out, static_cast<T>(*held));
  }
  return {};
}

// Encodes the bytes after the value's type tag.
Status encode_value(std::vector<std::byte>& out, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::UINT8: return put_checked_int<uint8_t>(out, v);
    case GgufValueType::INT8: return put_checked_int<int8_t>(out, v);
    case GgufValueType::UINT16: return put_checked_int<uint16_t>(out, v);
    case GgufValueType::INT16: return put_checked_int<int16_t>(out, v);
    case GgufValueType::UINT32: return put_checked_int<uint32_t>(out, v);
    case GgufValueType::INT32: return put_checked_int<int32_t>(out, v);
    case GgufValueType::UINT64: return put_checked_int<uint64_t>(out, v);
    case GgufValueType::INT64: return put_checked_int<int64_t>(out, v);
    case GgufValueType::FLOAT32:
    case GgufValueType::FLOAT64: {
      const auto* held = std::get_if<double>(&v.value);
      if (held == nullptr) return fail("float value not held as double");
      if (v.type == GgufValueType::FLOAT32)
        put<float>(out, static_cast<float>(*held));
      else
        put<double>(out, *held);
      return {};
    }
    case GgufValueType::BOOL: {
      const auto* held = std::get_if<bool>(&v.value);
      if (held == nullptr) return fail("bool value not held as bool");
      put<uint8_t>(out, *held ? 1 : 0);
      return {};
    }
    case GgufValueType::STRING: {
      const auto* held = std::get_if<std::string_view>(&v.value);
      if (held == nullptr) return fail("string value not held as string_view");
      put_string(out, *held);
      return {};
    }
    case GgufValueType::ARRAY: {
      const auto* held = std::get_if<std::shared_ptr<GgufArray>>(&v.value);
      if (held == nullptr || *held == nullptr) return fail("array value not held as array");
      const GgufArray& array = **held;
      put_type(out, array.elem_type);
      put<uint64_t>(out, array.items.size());
      for (std::size_t i = 0; i < array.items.size(); ++i) {
        const GgufValue& item = array.items[i];
        if (item.type != array.elem_type)
          return fail("array item #" + std::to_string(i) + " is " + std::string(gguf_value_type_name(item.type)) +
                      " in an array of " + std::string(gguf_value_type_name(array.elem_type)));
        if (auto st = encode_value(out, item); !st) return fail("array item #" + std::to_string(i) + ": " + st.error().message);
      }
      return {};
    }
  }
  return fail("unknown value type " + std::to_string(static_cast<uint32_t>(v.type)));
}

template <class T>
std::vector<std::byte> scalar_payload(T v) {
  std::vector<std::byte> out;
  put<T>(out, v);
  return out;
}

Status write_all(int fd, const std::vector<std::byte>& bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("gguf: cannot write '" + path + "': " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

void GgufWriter::add_u8(std::string key, uint8_t v) {
  kvs_.push_back({std::move(key), GgufValueType::UINT8, scalar_payload(v)});
}
void GgufWriter::add_u32(std::string key, uint32_t v) {
  kvs_.push_back({std::move(key), GgufValueType::UINT32, scalar_payload(v)});
}
void GgufWriter::add_i32(std::string key, int32_t v) {
  kvs_.push_back({std::move(key), GgufValueType::INT32, scalar_payload(v)});
}
void GgufWriter::add_u64(std::string key, uint64_t v) {
  kvs_.push_back({std::move(key), GgufValueType::UINT64, scalar_payload(v)});
}
void GgufWriter::add_i64(std::string key, int64_t v) {
  kvs_.push_back({std::move(key), GgufValueType::INT64, scalar_payload(v)});
}
void GgufWriter::add_f32(std::string key, float v) {
  kvs_.push_back({std::move(key), GgufValueType::FLOAT32, scalar_payload(v)});
}
void GgufWriter::add_f64(std::string key, double v) {
  kvs_.push_back({std::move(key), GgufValueType::FLOAT64, scalar_payload(v)});
}
void GgufWriter::add_bool(std::string key, bool v) {
  kvs_.push_back({std::move(key), GgufValueType::BOOL, scalar_payload<uint8_t>(v ? 1 : 0)});
}

void GgufWriter::add_string(std::string key, std::string v) {
  std::vector<std::byte> payload;
  put_string(payload, v);
  kvs_.push_back({std::move(key), GgufValueType::STRING, std::move(payload)});
}

void GgufWriter::add_string_array(std::string key, const std::vector<std::string>& v) {
  std::vector<std::byte> payload;
  put_type(payload, GgufValueType::STRING);
  put<uint64_t>(payload, v.size());
  for (const auto& s : v) put_string(payload, s);
  kvs_.push_back({std::move(key), GgufValueType::ARRAY, std::move(payload)});
}

void GgufWriter::add_f32_array(std::string key, const std::vector<float>& v) {
  std::vector<std::byte> payload;
  put_type(payload, GgufValueType::FLOAT32);
  put<uint64_t>(payload, v.size());
  for (float f : v) put<float>(payload, f);
  kvs_.push_back({std::move(key), GgufValueType::ARRAY, std::move(payload)});
}

void GgufWriter::add_i32_array(std::string key, const std::vector<int32_t>& v) {
  std::vector<std::byte> payload;
  put_type(payload, GgufValueType::INT32);
  put<uint64_t>(payload, v.size());
  for (int32_t i : v) put<int32_t>(payload, i);
  kvs_.push_back({std::move(key), GgufValueType::ARRAY, std::move(payload)});
}

Status GgufWriter::add_value(std::string key, const GgufValue& v) {
  std::vector<std::byte> payload;
  if (auto st = encode_value(payload, v); !st) return fail("gguf writer: key '" + key + "': " + st.error().message);
  kvs_.push_back({std::move(key), v.type, std::move(payload)});
  return {};
}

void GgufWriter::add_tensor(std::string name, WeightType type, std::vector<uint64_t> dims,
                            std::vector<std::byte> data) {
  tensors_.push_back({std::move(name), type, std::move(dims), std::move(data)});
}

Status GgufWriter::validate() const {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > std::numeric_limits<uint32_t>::max())
    return fail("gguf writer: alignment " + std::to_string(alignment_) + " is not a power of two below 2^32");
  std::unordered_set<std::string_view> keys;
  for (const auto& kv : kvs_) {
    if (kv.key.empty()) return fail("gguf writer: empty key");
    if (!keys.insert(kv.key).second) return fail("gguf writer: duplicate key '" + kv.key + "'");
    if (kv.key == kAlignmentKey) {
      uint32_t stored = 0;
      if (kv.type != GgufValueType::UINT32 || kv.payload.size() != sizeof stored)
        return fail("gguf writer: general.alignment must be uint32");
      std::memcpy(&stored, kv.payload.data(), sizeof stored);
      if (stored != alignment_)
        return fail("gguf writer: general.alignment " + std::to_string(stored) + " differs from the alignment " +
                    std::to_string(alignment_) + " the data is laid out with");
    }
  }
  std::unordered_set<std::string_view> names;
  for (const auto& t : tensors_) {
    const std::string where = "gguf writer: tensor '" + t.name + "'";
    if (t.name.empty()) return fail("gguf writer: empty tensor name");
    if (t.name.size() > 256) return fail(where + ": name longer than 256 bytes");
    if (!names.insert(t.name).second) return fail(where + ": duplicate tensor name");
    if (t.dims.empty() || t.dims.size() > 4) return fail(where + ": needs 1 to 4 dimensions");
    const auto info = weight_type_info(static_cast<uint32_t>(t.type));
    if (!info) return fail(where + ": unknown type id " + std::to_string(static_cast<uint32_t>(t.type)));
    uint64_t n = 1;
    for (uint64_t d : t.dims) {
      if (d == 0 || d > (uint64_t{1} << 62) / n) return fail(where + ": dimension 0 or element count too large");
      n *= d;
    }
    if (t.dims[0] % info->block_elems != 0)
      return fail(where + ": row length " + std::to_string(t.dims[0]) + " is not a multiple of " +
                  std::to_string(info->block_elems));
    const uint64_t n_bytes = n / info->block_elems * info->block_bytes;
    if (n_bytes != t.data.size())
      return fail(where + ": " + std::to_string(t.data.size()) + " bytes of data, type " + std::string(info->name) +
                  " with these dimensions needs " + std::to_string(n_bytes));
  }
  return {};
}

std::vector<std::byte> GgufWriter::serialize() const {
  // A zero alignment would divide by zero below; validate() reports it, and
  // here the data is then laid out unaligned.
  const uint64_t alignment = alignment_ == 0 ? 1 : alignment_;
  bool has_alignment_key = false;
  for (const auto& kv : kvs_) has_alignment_key = has_alignment_key || kv.key == kAlignmentKey;
  const bool emit_alignment = !has_alignment_key && alignment_ != kDefaultAlignment;

  std::vector<std::byte> out;
  for (char ch : std::string_view("GGUF")) out.push_back(static_cast<std::byte>(ch));
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size() + (emit_alignment ? 1 : 0));
  if (emit_alignment) {
    put_string(out, kAlignmentKey);
    put_type(out, GgufValueType::UINT32);
    put<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  for (const auto& kv : kvs_) {
    put_string(out, kv.key);
    put_type(out, kv.type);
    out.insert(out.end(), kv.payload.begin(), kv.payload.end());
  }
  // Each tensor starts aligned; nothing follows the last one, so that a file
  // cut anywhere is detectably short.
  uint64_t offset = 0;
  std::vector<uint64_t> offsets;
  offsets.reserve(tensors_.size());
  for (const auto& t : tensors_) {
    offset = align_up(offset, alignment);
    offsets.push_back(offset);
    offset += t.data.size();
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offsets[i]);
  }
  const uint64_t data_offset = align_up(out.size(), alignment);
  out.resize(data_offset, std::byte{0});
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(data_offset + offsets[i], std::byte{0});
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  if (auto st = validate(); !st) return st;
  const std::vector<std::byte> bytes = serialize();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("gguf: cannot create '" + tmp + "': " + std::strerror(errno));
  Status st = write_all(fd, bytes, tmp);
  if (st && ::fsync(fd) != 0) st = fail("gguf: cannot fsync '" + tmp + "': " + std::strerror(errno));
  if (::close(fd) != 0 && st) st = fail("gguf: cannot close '" + tmp + "': " + std::strerror(errno));
  if (st && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = fail("gguf: cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename is only durable once the directory entry is.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail("gguf: cannot open directory '" + dir + "': " + std::strerror(errno));
  const bool synced = ::fsync(dfd) == 0;
  const int err = errno;
  ::close(dfd);
  if (!synced) return fail("gguf: cannot fsync directory '" + dir + "': " + std::strerror(err));
  return {};
}

}  // namespace clm
