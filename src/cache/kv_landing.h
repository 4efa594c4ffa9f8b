// Where promotion puts the K/V it reads from a tier: straight into pool
// blocks the caller reserved for it, so that restoring a prefix costs one
// read into the block rather than a staging buffer per entry to fault in,
// decode into another and copy a third time. A LandedEntry owns its block
// until the cache manager adopts it or gives it back to the pool. The cache
// declares these; tier/ reads into them (TierSet::fetch) and the scheduler
// hands out the blocks.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "cache/kv_pool.h"
#include "cache/tier_entry.h"

namespace clm {

// An entry read from a tier: checked, with its K/V either in a reserved pool
// block (block != kNoBlock; kv is then empty) or in its own kv buffer.
struct LandedEntry : TierEntry {
  BlockId block = kNoBlock;
};

// A pool block reserved for one entry's K/V.
struct KvLanding {
  BlockId block = kNoBlock;
  std::span<std::byte> kv;  // the block's bytes
};

// Hands out reserved pool blocks to TierSet::fetch.
class KvLandingSource {
 public:
  virtual ~KvLandingSource() = default;
  // The next chain lookup may deliver up to n entries: a hint to reserve
  // that many blocks at once.
  virtual void reserve(std::size_t n) = 0;
  // A reserved block, or nullopt when none is left (the entry then lands
  // in its own buffer).
  virtual std::optional<KvLanding> take() = 0;
  // A block take() gave whose read failed: it holds nothing usable.
  virtual void give_back(BlockId block) = 0;
};

}  // namespace clm
