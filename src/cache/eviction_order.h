// EvictionOrder: the order in which idle cached blocks leave the RAM pool,
// as one sort key. KvCacheManager decides which blocks may go (idle leaves:
// no request holds them and no cached block continues them) and tells this
// object; the policy is the key, and the victim is always the block with
// the smallest one. Today's key is (level, last use): blocks hit often
// enough (hot_after_hits) live on the hot level and go only when no normal
// block is left, least recently used first within a level. A policy with
// another shape (attention scores, a TTL class) is another key.
// Ties keep the order the blocks became evictable in. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "cache/kv_pool.h"

namespace clm {

class EvictionOrder {
 public:
  EvictionOrder(std::size_t n_blocks, uint32_t hot_after_hits);

  // A block that has just become cached, used now: normal level, no hits.
  void reset(BlockId id, double now);
  // Used now (its place in the order moves if it is evictable).
  void touch(BlockId id, double now);
  // A request reused it; true on its first hit since it was cached.
  bool count_hit(BlockId id);

  // Becomes evictable, at its place by key (an old parent that has just
  // become a leaf goes ahead of newer blocks), or stops being evictable.
  void enlist(BlockId id);
  void delist(BlockId id);
  bool listed(BlockId id) const { return use(id).listed; }

  // The evictable block to go first; kNoBlock when none is.
  BlockId victim() const;
  // The evictable blocks last used before `cutoff`, in eviction order.
  std::vector<BlockId> unused_since(double cutoff) const;

 private:
  struct Use {
    double last_use = 0.0;
    uint32_t hits = 0;
    bool hot = false;
    bool listed = false;
    uint64_t listed_as = 0;  // tie-break: when it became evictable
  };
  struct Entry {
    bool hot;
    double last_use;
    uint64_t listed_as;
    BlockId id;
    bool operator<(const Entry& o) const {
      if (hot != o.hot) return !hot;
      if (last_use != o.last_use) return last_use < o.last_use;
      return listed_as < o.listed_as;
    }
  };
  Use& use(BlockId id) { return uses_[static_cast<std::size_t>(id)]; }
  const Use& use(BlockId id) const { return uses_[static_cast<std::size_t>(id)]; }
  Entry entry(BlockId id) const;

  std::vector<Use> uses_;
  std::set<Entry> order_;
  uint64_t next_listing_ = 0;
  uint32_t hot_after_hits_;
};

}  // namespace clm
