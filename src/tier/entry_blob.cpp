#include "tier/entry_blob.h"

#include <bit>
#include <cstring>

namespace clm {

namespace {

static_assert(std::endian::native == std::endian::little, "the blob layout is the host's little-endian one");

constexpr uint32_t kMagic = 0x544d4c43;  // "CLMT"
constexpr uint16_t kVersion = 1;
// More tokens than a block can hold (Engine caps block_size at 4096) means
// a damaged header, not a block.
constexpr uint32_t kMaxTokens = 4096;

struct Header {
  uint32_t magic;
  uint16_t version;
  uint8_t kv_type;
  uint8_t reserved;
  uint64_t model_fingerprint;
  uint64_t key;
  uint64_t parent;
  int32_t n_layers, n_kv_heads, head_dim, block_size;
  uint32_t n_tokens;
  uint32_t n_positions;
  uint64_t kv_bytes;
};
static_assert(sizeof(Header) == 64, "no padding inside the header");

template <class T>
void put_bytes(std::string& out, const T* data, std::size_t count) {
  out.append(reinterpret_cast<const char*>(data), count * sizeof(T));
}

}  // namespace

std::string encode_entry(const TierEntry& e) {
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.kv_type = static_cast<uint8_t>(e.geometry.type);
  h.model_fingerprint = e.model_fingerprint;
  h.key = e.key;
  h.parent = e.parent;
  h.n_layers = e.geometry.n_layers;
  h.n_kv_heads = e.geometry.n_kv_heads;
  h.head_dim = e.geometry.head_dim;
  h.block_size = e.geometry.block_size;
  h.n_tokens = static_cast<uint32_t>(e.tokens.size());
  h.n_positions = static_cast<uint32_t>(e.positions.size());
  h.kv_bytes = e.kv.size();
  const uint64_t checksum = entry_checksum(e);
  std::string out;
  out.reserve(sizeof h + (e.tokens.size() + e.positions.size()) * sizeof(int32_t) + e.kv.size() + sizeof checksum);
  put_bytes(out, &h, 1);
  put_bytes(out, e.tokens.data(), e.tokens.size());
  put_bytes(out, e.positions.data(), e.positions.size());
  put_bytes(out, e.kv.data(), e.kv.size());
  put_bytes(out, &checksum, 1);
  return out;
}

Result<TierEntry> decode_entry(std::span<const std::byte> bytes) {
  Header h{};
  if (bytes.size() < sizeof h) return fail("truncated entry: " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.magic != kMagic) return fail("not an entry (bad magic)");
  if (h.version != kVersion) return fail("entry version " + std::to_string(h.version) + " is not supported");
  if (h.kv_type > static_cast<uint8_t>(KvType::F32)) return fail("unknown KV type in entry");
  if (h.n_tokens > kMaxTokens || h.n_positions > kMaxTokens) return fail("entry token count out of range");
  const uint64_t ints = (static_cast<uint64_t>(h.n_tokens) + h.n_positions) * sizeof(int32_t);
  const uint64_t body = bytes.size() - sizeof h;
  if (h.kv_bytes > body || ints + h.kv_bytes + sizeof(uint64_t) != body)
    return fail("entry sizes disagree with its length (truncated or damaged)");
  TierEntry e;
  e.model_fingerprint = h.model_fingerprint;
  e.key = h.key;
  e.parent = h.parent;
  e.geometry = KvGeometry{h.n_layers, h.n_kv_heads, h.head_dim, h.block_size, static_cast<KvType>(h.kv_type)};
  const std::byte* p = bytes.data() + sizeof h;
  e.tokens.resize(h.n_tokens);
  std::memcpy(e.tokens.data(), p, h.n_tokens * sizeof(int32_t));
  p += h.n_tokens * sizeof(int32_t);
  e.positions.resize(h.n_positions);
  std::memcpy(e.positions.data(), p, h.n_positions * sizeof(int32_t));
  p += h.n_positions * sizeof(int32_t);
  e.kv.assign(p, p + h.kv_bytes);
  p += h.kv_bytes;
  uint64_t stored = 0;
  std::memcpy(&stored, p, sizeof stored);
  if (stored != entry_checksum(e)) return fail("entry checksum mismatch");
  return e;
}

}  // namespace clm
