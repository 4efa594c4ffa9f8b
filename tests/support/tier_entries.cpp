#include "support/tier_entries.h"

namespace clm::test {

KvGeometry small_tier_geometry() { return KvGeometry{2, 2, 8, 4, KvType::F16}; }

TierEntry make_tier_entry(uint64_t fingerprint, BlockKey key, BlockKey parent, const KvGeometry& geometry) {
  TierEntry e;
  e.model_fingerprint = fingerprint;
  e.key = key;
  e.parent = parent;
  e.geometry = geometry;
  uint64_t state = key * 0x9E3779B97F4A7C15ull + fingerprint;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int i = 0; i < geometry.block_size; ++i) {
    e.tokens.push_back(static_cast<int32_t>(next() % 32000));
    e.positions.push_back(static_cast<int32_t>(key % 1000) * geometry.block_size + i);
  }
  e.kv.resize(geometry.block_bytes());
  for (std::byte& b : e.kv) b = static_cast<std::byte>(next() & 0xff);
  return e;
}

TierEntry chain_entry(uint64_t fingerprint, BlockKey key, BlockKey parent, int index, const KvGeometry& geometry) {
  TierEntry e = make_tier_entry(fingerprint, key, parent, geometry);
  for (int i = 0; i < geometry.block_size; ++i) {
    e.tokens[static_cast<std::size_t>(i)] = 10 + index * 4 + i;
    e.positions[static_cast<std::size_t>(i)] = index * geometry.block_size + i;
  }
  return e;
}

std::vector<TierEntry> chain_entries(uint64_t fingerprint, int n) {
  std::vector<TierEntry> out;
  for (int i = 0; i < n; ++i) {
    const BlockKey key = 1001 + static_cast<BlockKey>(i);
    out.push_back(chain_entry(fingerprint, key, i == 0 ? kNoKey : key - 1, i));
  }
  return out;
}

bool same_entry(const TierEntry& a, const TierEntry& b) {
  const KvGeometry& g = a.geometry;
  const KvGeometry& h = b.geometry;
  return a.model_fingerprint == b.model_fingerprint && a.key == b.key && a.parent == b.parent &&
         g.n_layers == h.n_layers && g.n_kv_heads == h.n_kv_heads && g.head_dim == h.head_dim &&
         g.block_size == h.block_size && g.types == h.types && a.tokens == b.tokens && a.positions == b.positions &&
         a.kv == b.kv;
}

}  // namespace clm::test
