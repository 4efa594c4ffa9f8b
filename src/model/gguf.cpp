#include "model/gguf.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>

#include "model/gguf_cursor.h"

namespace clm {

namespace {

using gguf_detail::ByteCursor;

constexpr uint64_t kDefaultAlignment = 32;
// Real files nest at most one level (arrays of strings); the limit only
// exists so that hostile nesting cannot exhaust the stack.
constexpr int kMaxArrayDepth = 16;
// Far above any real tensor, far below where size arithmetic could overflow.
constexpr uint64_t kMaxElements = uint64_t{1} << 62;
constexpr std::size_t kMaxTensorNameBytes = 256;
constexpr uint32_t kMaxDims = 4;
// Smallest possible encodings, used to refuse counts that the remaining
// bytes could never hold before anything is reserved for them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                // empty key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset

// Counts are checked against the remaining bytes, but one byte can stand for
// a 40-byte GgufValue; reserving only this much up front keeps a hostile count
// from costing more memory than the bytes actually parsed.
constexpr uint64_t kMaxReserve = 4096;

std::size_t reserve_size(uint64_t count) { return static_cast<std::size_t>(std::min(count, kMaxReserve)); }

constexpr uint32_t kMaxValueType = static_cast<uint32_t>(GgufValueType::FLOAT64);

std::string num(uint64_t v) { return std::to_string(v); }

std::string quoted(std::string_view s) {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "'" + std::string.
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out += s;
  out += '\'';
  return out;
}

bool is_unsigned_int(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}

bool is_signed_int(GgufValueType t) {
  return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
         t == GgufValueType::INT64;
}

bool is_float(GgufValueType t) { return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64; }

// Bytes of one encoded value of a fixed-size type; 0 for string and array.
uint64_t fixed_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64: return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

uint64_t min_encoded_size(GgufValueType t) {
  if (t == GgufValueType::STRING) return 8;
  if (t == GgufValueType::ARRAY) return 4 + 8;
  return fixed_size(t);
}

Result<GgufValueType> read_value_type(ByteCursor& c, std::string_view what) {
  const uint64_t at = c.pos();
  auto raw = c.read<uint32_t>(what);
  if (!raw) return std::unexpected(raw.error());
  if (*raw > kMaxValueType)
    return fail("unknown " + std::string(what) + " " + num(*raw) + " at byte " + num(at));
  return static_cast<GgufValueType>(*raw);
}

template <class Raw, class Held>
Result<GgufValue> read_number(ByteCursor& c, GgufValueType t) {
  auto raw = c.read<Raw>(gguf_value_type_name(t));
  if (!raw) return std::unexpected(raw.error());
  return GgufValue{t, static_cast<Held>(*raw)};
}

Result<GgufValue> read_value(ByteCursor& c, GgufValueType type, int depth);

Result<GgufValue> read_array(ByteCursor& c, int depth) {
  const uint64_t at = c.pos();
  if (depth >= kMaxArrayDepth)
    return fail("array at byte " + num(at) + " nested deeper than the limit of " + num(kMaxArrayDepth));
  auto elem_type = read_value_type(c, "array element type");
  if (!elem_type) return std::unexpected(elem_type.error());
  auto count = c.read<uint64_t>("array count");
  if (!count) return std::unexpected(count.error());
  const uint64_t min_size = min_encoded_size(*elem_type);
  if (*count > c.remaining() / min_size)
    return fail("array at byte " + num(at) + ": count " + num(*count) + " of " +
                std::string(gguf_value_type_name(*elem_type)) + " exceeds what the remaining " +
                num(c.remaining()) + " bytes can hold");
  auto array = std::make_shared<GgufArray>();
  array->elem_type = *elem_type;
  array->items.reserve(reserve_size(*count));
  for (uint64_t i = 0; i < *count; ++i) {
    auto item = read_value(c, *elem_type, depth + 1);
    if (!item) return fail("array element #" + num(i) + ": " + item.error().message);
    array->items.push_back(std::move(*item));
  }
  return GgufValue{GgufValueType::ARRAY, std::move(array)};
}

Result<GgufValue> read_value(ByteCursor& c, GgufValueType type, int depth) {
  switch (type) {
    case GgufValueType::UINT8: return read_number<uint8_t, uint64_t>(c, type);
    case GgufValueType::INT8: return read_number<int8_t, int64_t>(c, type);
    case GgufValueType::UINT16: return read_number<uint16_t, uint64_t>(c, type);
    case GgufValueType::INT16: return read_number<int16_t, int64_t>(c, type);
    case GgufValueType::UINT32: return read_number<uint32_t, uint64_t>(c, type);
    case GgufValueType::INT32: return read_number<int32_t, int64_t>(c, type);
    case GgufValueType::FLOAT32: return read_number<float, double>(c, type);
    case GgufValueType::UINT64: return read_number<uint64_t, uint64_t>(c, type);
    case GgufValueType::INT64: return read_number<int64_t, int64_t>(c, type);
    case GgufValueType::FLOAT64: return read_number<double, double>(c, type);
    case GgufValueType::BOOL: {
      const uint64_t at = c.pos();
      auto raw = c.read<uint8_t>("bool");
      if (!raw) return std::unexpected(raw.error());
      if (*raw > 1) return fail("bool at byte " + num(at) + " has value " + num(*raw) + " (must be 0 or 1)");
      return GgufValue{type, *raw == 1};
    }
    case GgufValueType::STRING: {
      auto s = c.read_string("string");
      if (!s) return std::unexpected(s.error());
      return GgufValue{type, *s};
    }
    case GgufValueType::ARRAY: return read_array(c, depth);
  }
  return fail("unknown value type " + num(static_cast<uint32_t>(type)));
}

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

struct Header {
  uint32_t version = 0;
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
};

Result<Header> read_header(ByteCursor& c) {
  if (c.size() < 4) return fail("gguf: file of " + num(c.size()) + " bytes is too small to hold the magic");
  auto magic = c.read<std::array<unsigned char, 4>>("magic");
  if ((*magic)[0] != 'G' || (*magic)[1] != 'G' || (*magic)[2] != 'U' || (*magic)[3] != 'F') {
    std::string hex;
    for (unsigned char b : *magic) {
      constexpr char kDigits[] = "0123456789abcdef";
      hex += kDigits[b >> 4];
      hex += kDigits[b & 15];
    }
    return fail("gguf: bad magic 0x" + hex + " (expected 'GGUF')");
  }
  Header h;
  auto version = c.read<uint32_t>("version");
  if (!version) return fail("gguf: " + version.error().message);
  if (*version != 2 && *version != 3)
    return fail("gguf: unsupported version " + num(*version) + " (only versions 2 and 3 are read)");
  h.version = *version;
  auto tensor_count = c.read<uint64_t>("tensor count");
  if (!tensor_count) return fail("gguf: " + tensor_count.error().message);
  auto kv_count = c.read<uint64_t>("metadata count");
  if (!kv_count) return fail("gguf: " + kv_count.error().message);
  // Both counts must fit in what is left, together, at their smallest
  // possible encodings; only then may anything be reserved for them.
  const uint64_t rest = c.remaining();
  if (*kv_count > rest / kMinKvBytes)
    return fail("gguf: metadata count " + num(*kv_count) + " exceeds what the remaining " + num(rest) +
                " bytes can hold");
  if (*tensor_count > (rest - *kv_count * kMinKvBytes) / kMinTensorInfoBytes)
    return fail("gguf: tensor count " + num(*tensor_count) + " exceeds what the remaining " + num(rest) +
                " bytes can hold");
  h.tensor_count = *tensor_count;
  h.kv_count = *kv_count;
  return h;
}

// Reads one tensor info (everything but the data position check, which needs
// the data section start).
Result<GgufTensorInfo> read_tensor_info(ByteCursor& c, uint64_t index, uint64_t alignment) {
  const uint64_t at = c.pos();
  const std::string where = "gguf: tensor info #" + num(index) + " at byte " + num(at);
  auto name = c.read_string("tensor name");
  if (!name) return fail(where + ": " + name.error().message);
  if (name->empty()) return fail(where + ": empty tensor name");
  if (name->size() > kMaxTensorNameBytes)
    return fail(where + ": tensor name of " + num(name->size()) + " bytes is longer than the limit of " +
                num(kMaxTensorNameBytes));
  GgufTensorInfo info;
  info.name = std::string(*name);
  const std::string tensor = "gguf: tensor " + quoted(*name) + " (info at byte " + num(at) + ")";
  auto n_dims = c.read<uint32_t>("dimension count");
  if (!n_dims) return fail(tensor + ": " + n_dims.error().message);
  if (*n_dims == 0 || *n_dims > kMaxDims)
    return fail(tensor + ": dimension count " + num(*n_dims) + " outside 1.." + num(kMaxDims));
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < *n_dims; ++d) {
    auto dim = c.read<uint64_t>("dimension");
    if (!dim) return fail(tensor + ": " + dim.error().message);
    if (*dim == 0) return fail(tensor + ": dimension " + num(d) + " is 0");
    if (*dim > kMaxElements / n_elements)
      return fail(tensor + ": element count overflows (dimension " + num(d) + " = " + num(*dim) +
                  ", limit 2^62 elements)");
    n_elements *= *dim;
    info.dims.push_back(*dim);
  }
  info.n_elements = n_elements;
  auto type_id = c.read<uint32_t>("type id");
  if (!type_id) return fail(tensor + ": " + type_id.error().message);
  const auto type_info = weight_type_info(*type_id);
  if (!type_info) return fail(tensor + ": unknown ggml type id " + num(*type_id));
  info.type = static_cast<WeightType>(*type_id);
  if (info.dims[0] % type_info->block_elems != 0)
    return fail(tensor + ": row length " + num(info.dims[0]) + " is not a multiple of the " +
                std::string(type_info->name) + " block of " + num(type_info->block_elems) + " elements");
  const uint64_t n_blocks = n_elements / type_info->block_elems;
  if (n_blocks > std::numeric_limits<uint64_t>::max() / type_info->block_bytes)
    return fail(tensor + ": byte size overflows");
  info.n_bytes = n_blocks * type_info->block_bytes;
  auto offset = c.read<uint64_t>("data offset");
  if (!offset) return fail(tensor + ": " + offset.error().message);
  if (*offset % alignment != 0)
    return fail(tensor + ": data offset " + num(*offset) + " is not aligned to " + num(alignment));
  info.offset = *offset;  // relative until the data section start is known
  return info;
}

Result<uint64_t> alignment_from(const GgufValue& v) {
  if (v.type != GgufValueType::UINT32)
    return fail("gguf: general.alignment is " + std::string(gguf_value_type_name(v.type)) + ", must be uint32");
  const uint64_t a = std::get<uint64_t>(v.value);
  if (a == 0 || (a & (a - 1)) != 0) return fail("gguf: general.alignment " + num(a) + " is not a power of two");
  return a;
}

std::string type_error(std::string_view key, GgufValueType actual, std::string_view wanted) {
  return "gguf: key " + quoted(key) + " is " + std::string(gguf_value_type_name(actual)) + ", not " +
         std::string(wanted);
}

// Widens any integer value to int64 (as a signed) or uint64; the caller says
// which it needs.
Result<int64_t> as_int(const GgufValue& v, std::string_view key) {
  if (is_signed_int(v.type)) return std::get<int64_t>(v.value);
  if (is_unsigned_int(v.type)) {
    const uint64_t u = std::get<uint64_t>(v.value);
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail("gguf: key " + quoted(key) + " value " + num(u) + " does not fit int64");
    return static_cast<int64_t>(u);
  }
  return fail(type_error(key, v.type, "an integer"));
}

Result<const GgufArray*> as_array(const GgufValue* v, std::string_view key) {
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  if (v->type != GgufValueType::ARRAY) return fail(type_error(key, v->type, "an array"));
  return std::get<std::shared_ptr<GgufArray>>(v->value).get();
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

Result<GgufFile> GgufFile::open(const std::string& path, FileLoad load,
                                const std::function<void(float)>& on_progress) {
  auto image = FileImage::open(path, load, on_progress);
  if (!image) return fail("gguf: " + image.error().message);
  // Held on the heap so that views into it survive moves of the GgufFile.
  auto file = std::make_shared<FileImage>(std::move(*image));
  auto parsed = parse(file->bytes());
  if (!parsed) return fail(parsed.error().message + " (in '" + path + "')");
  parsed->file_ = std::move(file);
  parsed->path_ = path;
  return parsed;
}

Result<GgufFile> GgufFile::parse(std::span<const std::byte> bytes) {
  ByteCursor c(bytes);
  auto header = read_header(c);
  if (!header) return std::unexpected(header.error());

  GgufFile out;
  out.bytes_ = bytes;
  out.version_ = header->version;
  out.kv_.reserve(reserve_size(header->kv_count));
  std::unordered_set<std::string_view> keys;
  for (uint64_t i = 0; i < header->kv_count; ++i) {
    const uint64_t at = c.pos();
    const std::string where = "gguf: metadata key #" + num(i) + " at byte " + num(at);
    auto key = c.read_string("key");
    if (!key) return fail(where + ": " + key.error().message);
    if (key->empty()) return fail(where + ": empty key");
    const std::string named = where + " " + quoted(*key);
    if (!keys.insert(*key).second) return fail(named + ": duplicate key");
    auto type = read_value_type(c, "value type");
    if (!type) return fail(named + ": " + type.error().message);
    auto value = read_value(c, *type, 0);
    if (!value) return fail(named + ": " + value.error().message);
    out.kv_.emplace_back(*key, std::move(*value));
  }
  if (const GgufValue* a = out.find("general.alignment")) {
    auto alignment = alignment_from(*a);
    if (!alignment) return std::unexpected(alignment.error());
    out.alignment_ = *alignment;
  } else {
    out.alignment_ = kDefaultAlignment;
  }

  out.tensors_.reserve(reserve_size(header->tensor_count));
  std::unordered_set<std::string_view> names;
  for (uint64_t i = 0; i < header->tensor_count; ++i) {
    auto info = read_tensor_info(c, i, out.alignment_);
    if (!info) return std::unexpected(info.error());
    out.tensors_.push_back(std::move(*info));
  }
  // Names are views into tensors_, which no longer grows.
  for (const auto& t : out.tensors_)
    if (!names.insert(t.name).second) return fail("gguf: duplicate tensor name " + quoted(t.name));

  // alignment < 2^32 and pos <= file size, so this cannot overflow.
  out.data_offset_ = align_up(c.pos(), out.alignment_);
  if (!out.tensors_.empty() && out.data_offset_ > bytes.size())
    return fail("gguf: data section start " + num(out.data_offset_) + " is past the end of the file (size " +
                num(bytes.size()) + ")");

  for (auto& t : out.tensors_) {
    const uint64_t room = bytes.size() - out.data_offset_;
    if (t.offset > room || t.n_bytes > room - t.offset)
      return fail("gguf: tensor " + quoted(t.name) + " data [offset " + num(out.data_offset_ + t.offset) +
                  " (" + num(t.offset) + " into the data section), " + num(t.n_bytes) +
                  " bytes] runs past end of file (size " + num(bytes.size()) + ")");
    t.offset += out.data_offset_;
    t.data = bytes.data() + t.offset;
  }

  // Overlapping data would let a write through one tensor (or a quantizer
  // that trusts the layout) corrupt another; real files never overlap.
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(out.tensors_.size());
  for (const auto& t : out.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    const GgufTensorInfo& next = *by_offset[i];
    if (prev.offset + prev.n_bytes > next.offset)
      return fail("gguf: tensor " + quoted(prev.name) + " data [offset " + num(prev.offset) + ", " +
                  num(prev.n_bytes) + " bytes] overlaps tensor " + quoted(next.name) + " at offset " +
                  num(next.offset));
  }
  return out;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  if (v->type != GgufValueType::STRING) return fail(type_error(key, v->type, "a string"));
  return std::get<std::string_view>(v->value);
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  if (is_unsigned_int(v->type)) return std::get<uint64_t>(v->value);
  if (is_signed_int(v->type)) {
    const int64_t s = std::get<int64_t>(v->value);
    if (s < 0) return fail("gguf: key " + quoted(key) + " value " + std::to_string(s) + " is negative");
    return static_cast<uint64_t>(s);
  }
  return fail(type_error(key, v->type, "an integer"));
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  return as_int(*v, key);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  if (!is_float(v->type)) return fail(type_error(key, v->type, "a float"));
  return std::get<double>(v->value);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fail("gguf: key " + quoted(key) + " not found");
  if (v->type != GgufValueType::BOOL) return fail(type_error(key, v->type, "a bool"));
  return std::get<bool>(v->value);
}

Result<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  auto array = as_array(find(key), key);
  if (!array) return std::unexpected(array.error());
  if ((*array)->elem_type != GgufValueType::STRING)
    return fail(type_error(key, (*array)->elem_type, "a string") + " array");
  std::vector<std::string_view> out;
  out.reserve((*array)->items.size());
  for (const auto& item : (*array)->items) out.push_back(std::get<std::string_view>(item.value));
  return out;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  auto array = as_array(find(key), key);
  if (!array) return std::unexpected(array.error());
  if (!is_float((*array)->elem_type)) return fail(type_error(key, (*array)->elem_type, "a float") + " array");
  std::vector<float> out;
  out.reserve((*array)->items.size());
  for (const auto& item : (*array)->items) out.push_back(static_cast<float>(std::get<double>(item.value)));
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  auto array = as_array(find(key), key);
  if (!array) return std::unexpected(array.error());
  const GgufValueType elem = (*array)->elem_type;
  if (!is_signed_int(elem) && !is_unsigned_int(elem))
    return fail(type_error(key, elem, "an integer") + " array");
  std::vector<int64_t> out;
  out.reserve((*array)->items.size());
  for (const auto& item : (*array)->items) {
    auto v = as_int(item, key);
    if (!v) return std::unexpected(v.error());
    out.push_back(*v);
  }
  return out;
}

}  // namespace clm
