// Deterministic KV blocks for the tier tests: small geometry, bytes and
// tokens derived from the key, so that a read-back can be compared bit for
// bit with what was written.
#pragma once

#include <cstdint>

#include "tier/tier_entry.h"

namespace clm::test {

// 2 layers, 2 KV heads, head_dim 8, blocks of 4 tokens, F16: 1 KiB a block.
KvGeometry small_tier_geometry();

TierEntry make_tier_entry(uint64_t fingerprint, BlockKey key, BlockKey parent,
                          const KvGeometry& geometry = small_tier_geometry());

bool same_entry(const TierEntry& a, const TierEntry& b);

}  // namespace clm::test
