// Entries for the tier tests: one chain of small blocks, each pointing at
// the previous one, with bytes that differ per block.
#pragma once

#include <vector>

#include "tier/tier_entry.h"

namespace clm::test {

inline KvGeometry small_geometry() { return KvGeometry{2, 1, 4, 4, KvType::F16}; }

inline TierEntry chain_entry(uint64_t fingerprint, BlockKey key, BlockKey parent, int index) {
  TierEntry e;
  e.model_fingerprint = fingerprint;
  e.key = key;
  e.parent = parent;
  e.geometry = small_geometry();
  for (int i = 0; i < e.geometry.block_size; ++i) {
    e.tokens.push_back(10 + index * 4 + i);
    e.positions.push_back(index * e.geometry.block_size + i);
  }
  e.kv.resize(e.geometry.block_bytes());
  for (std::size_t i = 0; i < e.kv.size(); ++i) e.kv[i] = static_cast<std::byte>(i * 3 + static_cast<std::size_t>(index));
  return e;
}

// Keys 1001, 1002, ... chained from the first.
inline std::vector<TierEntry> chain_entries(uint64_t fingerprint, int n) {
  std::vector<TierEntry> out;
  for (int i = 0; i < n; ++i)
    out.push_back(chain_entry(fingerprint, 1001 + static_cast<BlockKey>(i), i == 0 ? kNoKey : 1000 + static_cast<BlockKey>(i), i));
  return out;
}

}  // namespace clm::test
