#include "tier/entry_codec.h"

#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/hex.h"

namespace clm {

namespace {

using nlohmann::json;

// Bounds on what a header may declare, so that a hostile or damaged file
// cannot make the reader allocate without limit.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
// Each dimension at most 4096: the byte size of a block (a product of four
// dimensions and the element size) then stays far below 2^64.
constexpr int64_t kMaxDim = 4096;
constexpr const char* kFormat = "clmcache-kv-block";
// 2: K and V each name their type (k_type, v_type), and q8_0 is stored raw.
constexpr const char* kVersion = "2";

// safetensors has no quantized dtype (nor one for an fp8 row with its
// scale): a q8_0, q4_0 or fp8 tensor is its raw bytes (U8), each row
// kv_row_bytes long, its type named by the metadata. (q4_0 and fp8 needed no
// new version: a reader that predates them rejects the type name.)
const char* dtype_name(KvType type) {
  switch (type) {
    case KvType::F16: return "F16";
    case KvType::F32: return "F32";
    case KvType::Q8_0:
    case KvType::Q4_0:
    case KvType::Fp8: return "U8";
  }
  return "?";
}

// The last dimension of a tensor: elements per row, or bytes for a raw one.
int64_t row_extent(KvType type, int head_dim) {
  return is_quantized(type) ? static_cast<int64_t>(kv_row_bytes(type, head_dim)) : head_dim;
}

// Only the canonical spelling (what hex64 writes) is accepted, so that every
// change to the stored bytes is detected, not just those that change a value.
bool parse_hex64(const std::string& text, uint64_t& out) {
  if (text.size() != 16) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && end == text.data() + text.size() && hex64(out) == text;
}

std::string join_ints(const std::vector<int32_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out;
}

bool parse_ints(const std::string& text, std::size_t count, std::vector<int32_t>& out) {
  out.clear();
  if (count == 0) return text.empty();
  // Canonical spelling only, as for hex keys: no leading zeros or plus signs.
  auto canonical = [&] { return join_ints(out) == text; };
  const char* p = text.data();
  const char* end = p + text.size();
  for (std::size_t i = 0; i < count; ++i) {
    if (i) {
      if (p == end || *p != ',') return false;
      ++p;
    }
    int32_t value = 0;
    auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc()) return false;
    out.push_back(value);
    p = next;
  }
  return p == end && canonical();
}

// The tensors hold K of every layer then V of every layer; the pool's block
// interleaves them per layer ([layer][K|V][head][token][row]).
json tensor_json(const KvGeometry& g, KvType type, std::size_t begin, std::size_t end) {
  return json{{"dtype", dtype_name(type)},
              {"shape", {g.n_layers, g.n_kv_heads, g.block_size, row_extent(type, g.head_dim)}},
              {"data_offsets", {begin, end}}};
}

bool read_kv_type(const json& meta, const char* name, KvType& out) {
  auto it = meta.find(name);
  if (it == meta.end() || !it->is_string()) return false;
  const auto t = parse_kv_type(it->get_ref<const std::string&>());
  if (t) out = *t;
  return t.has_value();
}

const std::string* metadata_string(const json& meta, const char* name) {
  auto it = meta.find(name);
  if (it == meta.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

bool read_dim(const json& meta, const char* name, int& out) {
  const std::string* text = metadata_string(meta, name);
  if (!text) return false;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value <= 0 || value > kMaxDim ||
      std::to_string(value) != *text)
    return false;
  out = static_cast<int>(value);
  return true;
}

// Checks that a tensor entry of the header describes exactly what the
// metadata's geometry implies, at the expected offsets.
bool tensor_matches(const json& header, const char* name, const KvGeometry& g, KvType type, std::size_t begin,
                    std::size_t end) {
  auto it = header.find(name);
  if (it == header.end() || !it->is_object()) return false;
  return *it == tensor_json(g, type, begin, end);
}

}  // namespace

std::vector<std::byte> encode_entry(const TierEntry& entry) {
  const KvGeometry& g = entry.geometry;
  const std::size_t k_bytes = static_cast<std::size_t>(g.n_layers) * g.k_layer_bytes();
  json header;
  header["k"] = tensor_json(g, g.types.k, 0, k_bytes);
  header["v"] = tensor_json(g, g.types.v, k_bytes, entry.kv.size());
  header["__metadata__"] = json{
      {"format", kFormat},
      {"version", kVersion},
      {"fingerprint", hex64(entry.model_fingerprint)},
      {"key", hex64(entry.key)},
      {"parent", hex64(entry.parent)},
      {"n_layers", std::to_string(g.n_layers)},
      {"n_kv_heads", std::to_string(g.n_kv_heads)},
      {"head_dim", std::to_string(g.head_dim)},
      {"block_size", std::to_string(g.block_size)},
      {"k_type", std::string(kv_type_name(g.types.k))},
      {"v_type", std::string(kv_type_name(g.types.v))},
      {"tokens", join_ints(entry.tokens)},
      {"positions", join_ints(entry.positions)},
      {"checksum", hex64(entry_checksum(entry))},
  };
  std::string text = header.dump();
  // The spec allows trailing spaces; they align the data to 8 bytes.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<std::byte> out(8 + text.size() + entry.kv.size());
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::byte* k = out.data() + 8 + text.size();
  std::byte* v = k + k_bytes;
  const std::size_t k_part = g.k_layer_bytes(), v_part = g.v_layer_bytes();
  for (int layer = 0; layer < g.n_layers && k_part + v_part > 0; ++layer) {
    const std::byte* src = entry.kv.data() + static_cast<std::size_t>(layer) * g.layer_bytes();
    const auto l = static_cast<std::size_t>(layer);
    std::memcpy(k + l * k_part, src, k_part);
    std::memcpy(v + l * v_part, src + k_part, v_part);
  }
  return out;
}

EntryReader memory_reader(std::span<const std::byte> bytes) {
  return [bytes](uint64_t offset, std::span<std::byte> out) {
    if (offset > bytes.size() || out.size() > bytes.size() - offset) return false;
    std::memcpy(out.data(), bytes.data() + offset, out.size());
    return true;
  };
}

Result<TierEntry> decode_entry(std::span<const std::byte> bytes) {
  const EntryReader read = memory_reader(bytes);
  Result<EntryHeader> header = read_entry_header(bytes.size(), read);
  if (!header) return std::unexpected(header.error());
  std::vector<std::byte> kv(header->entry.geometry.block_bytes());
  if (Status done = read_entry_kv(*header, read, kv); !done) return std::unexpected(done.error());
  TierEntry entry = std::move(header->entry);
  entry.kv = std::move(kv);
  return entry;
}

Result<EntryHeader> read_entry_header(uint64_t size, const EntryReader& read) {
  if (size == 0) return fail("empty file");
  if (size < 8) return fail("shorter than a safetensors header");
  std::byte length_bytes[8];
  if (!read(0, length_bytes)) return fail("cannot read the header length");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(length_bytes[i]) << (8 * i);
  if (length > kMaxHeaderBytes || length > size - 8) return fail("header length out of range (truncated?)");
  std::string text(length, '\0');
  if (!read(8, std::as_writable_bytes(std::span<char>(text)))) return fail("cannot read the header");
  const char* begin = text.data();
  // The JSON parser stops at a NUL byte: one would hide what follows it.
  if (std::memchr(begin, 0, length) != nullptr) return fail("a NUL byte in the header");
  const json header = json::parse(begin, begin + length, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return fail("the header is not a JSON object");
  auto meta_it = header.find("__metadata__");
  if (meta_it == header.end() || !meta_it->is_object()) return fail("no __metadata__");
  const json& meta = *meta_it;
  const std::string* format = metadata_string(meta, "format");
  const std::string* version = metadata_string(meta, "version");
  if (!format || *format != kFormat || !version || *version != kVersion) return fail("not a clmcache KV block");

  EntryHeader out;
  TierEntry& entry = out.entry;
  KvGeometry& g = entry.geometry;
  if (!read_dim(meta, "n_layers", g.n_layers) || !read_dim(meta, "n_kv_heads", g.n_kv_heads) ||
      !read_dim(meta, "head_dim", g.head_dim) || !read_dim(meta, "block_size", g.block_size))
    return fail("bad geometry in the metadata");
  if (!read_kv_type(meta, "k_type", g.types.k) || !read_kv_type(meta, "v_type", g.types.v))
    return fail("bad k_type or v_type");
  for (const KvType t : {g.types.k, g.types.v})
    if (!kv_type_unsupported(t, g.head_dim).empty()) return fail("a KV type the head_dim cannot take");
  const std::string* fingerprint = metadata_string(meta, "fingerprint");
  const std::string* key = metadata_string(meta, "key");
  const std::string* parent = metadata_string(meta, "parent");
  const std::string* checksum_text = metadata_string(meta, "checksum");
  if (!fingerprint || !parse_hex64(*fingerprint, entry.model_fingerprint) || !key || !parse_hex64(*key, entry.key) ||
      !parent || !parse_hex64(*parent, entry.parent) || !checksum_text || !parse_hex64(*checksum_text, out.checksum))
    return fail("bad fingerprint, key, parent or checksum in the metadata");
  const std::string* tokens = metadata_string(meta, "tokens");
  const std::string* positions = metadata_string(meta, "positions");
  const auto block_tokens = static_cast<std::size_t>(g.block_size);
  if (!tokens || !parse_ints(*tokens, block_tokens, entry.tokens) || !positions ||
      !parse_ints(*positions, block_tokens, entry.positions))
    return fail("bad tokens or positions in the metadata");

  const std::size_t kv_bytes = g.block_bytes();
  const std::size_t k_bytes = static_cast<std::size_t>(g.n_layers) * g.k_layer_bytes();
  if (header.size() != 3 || !tensor_matches(header, "k", g, g.types.k, 0, k_bytes) ||
      !tensor_matches(header, "v", g, g.types.v, k_bytes, kv_bytes))
    return fail("the tensors do not match the metadata");
  if (size - 8 - length != kv_bytes) return fail("the data size is wrong (truncated?)");
  out.kv_offset = 8 + length;
  return out;
}

Status read_entry_kv(const EntryHeader& header, const EntryReader& read, std::span<std::byte> kv) {
  const KvGeometry& g = header.entry.geometry;
  if (kv.size() != g.block_bytes()) return fail("the destination does not hold one block");
  // The file holds K of every layer, then V of every layer; the block
  // interleaves them per layer. Each part goes straight to its place.
  const std::size_t k_part = g.k_layer_bytes(), v_part = g.v_layer_bytes();
  const uint64_t k = header.kv_offset;
  const uint64_t v = k + static_cast<uint64_t>(g.n_layers) * k_part;
  for (int layer = 0; layer < g.n_layers; ++layer) {
    const std::size_t at = static_cast<std::size_t>(layer) * g.layer_bytes();
    const auto l = static_cast<uint64_t>(layer);
    if (!read(k + l * k_part, kv.subspan(at, k_part)) || !read(v + l * v_part, kv.subspan(at + k_part, v_part)))
      return fail("cannot read the tensors (truncated?)");
  }
  if (entry_checksum(header.entry, kv) != header.checksum) return fail("checksum mismatch");
  return {};
}

std::size_t max_entry_bytes(const KvGeometry& geometry) {
  return 8 + static_cast<std::size_t>(kMaxHeaderBytes) + geometry.block_bytes();
}

}  // namespace clm
