// Deterministic KV blocks for the tier tests: small geometry, bytes and
// tokens derived from the key, so that a read-back can be compared bit for
// bit with what was written.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/tier_entry.h"

namespace clm::test {

// 2 layers, 2 KV heads, head_dim 8, blocks of 4 tokens, F16: 1 KiB a block.
KvGeometry small_tier_geometry();

TierEntry make_tier_entry(uint64_t fingerprint, BlockKey key, BlockKey parent,
                          const KvGeometry& geometry = small_tier_geometry());

// Block `index` of a chain as a prompt would make it: tokens 10 + 4 * index
// + i, natural positions (index * block_size + i), and the parent's key.
TierEntry chain_entry(uint64_t fingerprint, BlockKey key, BlockKey parent, int index,
                      const KvGeometry& geometry = small_tier_geometry());
// n chained blocks with keys 1001, 1002, ...
std::vector<TierEntry> chain_entries(uint64_t fingerprint, int n);

bool same_entry(const TierEntry& a, const TierEntry& b);

}  // namespace clm::test
