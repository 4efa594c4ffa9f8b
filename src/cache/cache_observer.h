// CacheObserver: what the KV cache manager tells the storage tiers below it
// (tier/tier_set.h). Calls come from the manager's owner (the scheduler's
// thread) and must not block: an observer copies what it needs and queues
// any I/O for another thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cache/block_key.h"

namespace clm {

// A full exact block as it was just registered in the prefix index.
struct CachedBlockView {
  BlockKey key = kNoKey;
  BlockKey parent = kNoKey;
  std::span<const int32_t> tokens;
  std::span<const int32_t> positions;
  std::span<const std::byte> kv;  // the pool block's bytes
};

class CacheObserver {
 public:
  virtual ~CacheObserver() = default;
  // A full block computed here became an exact cached block (not one
  // attached from the index or promoted from a tier): write-through.
  virtual void block_computed(const CachedBlockView& block) = 0;
  // A full exact block entered or left the prefix index: RAM residency,
  // which promotion skips.
  virtual void block_resident(BlockKey key) = 0;
  virtual void block_gone(BlockKey key) = 0;
};

}  // namespace clm
