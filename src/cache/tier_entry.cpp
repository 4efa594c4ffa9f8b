#include "cache/tier_entry.h"

#include <xxhash.h>

namespace clm {

namespace {

template <class T>
void feed(XXH3_state_t* state, const T& value) {
  XXH3_64bits_update(state, &value, sizeof value);
}

}  // namespace

uint64_t entry_checksum(const TierEntry& entry) { return entry_checksum(entry, entry.kv); }

uint64_t entry_checksum(const TierEntry& entry, std::span<const std::byte> kv) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  feed(state, entry.model_fingerprint);
  feed(state, entry.key);
  feed(state, entry.parent);
  const KvGeometry& g = entry.geometry;
  const int32_t shape[6] = {g.n_layers, g.n_kv_heads, g.head_dim, g.block_size, static_cast<int32_t>(g.types.k),
                            static_cast<int32_t>(g.types.v)};
  feed(state, shape);
  const uint64_t sizes[3] = {entry.tokens.size(), entry.positions.size(), kv.size()};
  feed(state, sizes);
  XXH3_64bits_update(state, entry.tokens.data(), entry.tokens.size() * sizeof(int32_t));
  XXH3_64bits_update(state, entry.positions.data(), entry.positions.size() * sizeof(int32_t));
  XXH3_64bits_update(state, kv.data(), kv.size());
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

const char* entry_defect(const TierEntry& entry, uint64_t model_fingerprint, BlockKey key,
                         const KvGeometry& geometry) {
  if (const char* defect = header_defect(entry, model_fingerprint, key, geometry)) return defect;
  if (entry.kv.size() != geometry.block_bytes()) return "the entry's K/V size is wrong";
  return nullptr;
}

const char* header_defect(const TierEntry& entry, uint64_t model_fingerprint, BlockKey key,
                          const KvGeometry& geometry) {
  if (entry.model_fingerprint != model_fingerprint) return "another model's entry";
  if (entry.key != key) return "the entry holds another key";
  const KvGeometry& g = entry.geometry;
  if (g.n_layers != geometry.n_layers || g.n_kv_heads != geometry.n_kv_heads || g.head_dim != geometry.head_dim ||
      g.block_size != geometry.block_size || g.types != geometry.types)
    return "the entry's KV geometry differs from the pool's";
  const auto block_tokens = static_cast<std::size_t>(geometry.block_size);
  if (entry.tokens.size() != block_tokens || entry.positions.size() != block_tokens)
    return "the entry does not hold one block of tokens";
  return nullptr;
}

}  // namespace clm
