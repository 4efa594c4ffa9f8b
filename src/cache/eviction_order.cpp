#include "cache/eviction_order.h"

#include <limits>

#include "util/check.h"

namespace clm {

EvictionOrder::EvictionOrder(std::size_t n_blocks, uint32_t hot_after_hits)
    : uses_(n_blocks), hot_after_hits_(hot_after_hits) {}

EvictionOrder::Entry EvictionOrder::entry(BlockId id) const {
  const Use& u = use(id);
  return {u.hot, u.last_use, u.listed_as, id};
}

void EvictionOrder::reset(BlockId id, double now) {
  CLM_CHECK(!use(id).listed, "a newly cached block is not evictable yet");
  use(id) = Use{now, 0, false, false, 0};
}

void EvictionOrder::touch(BlockId id, double now) {
  Use& u = use(id);
  if (!u.listed) {
    u.last_use = now;
    return;
  }
  order_.erase(entry(id));
  u.last_use = now;
  order_.insert(entry(id));
}

bool EvictionOrder::count_hit(BlockId id) {
  Use& u = use(id);
  CLM_CHECK(!u.listed, "a block is reused while a request holds it");
  const bool first = u.hits++ == 0;
  if (u.hits >= hot_after_hits_) u.hot = true;
  return first;
}

void EvictionOrder::enlist(BlockId id) {
  Use& u = use(id);
  CLM_CHECK(!u.listed, "block already evictable");
  u.listed = true;
  u.listed_as = next_listing_++;
  order_.insert(entry(id));
}

void EvictionOrder::delist(BlockId id) {
  Use& u = use(id);
  CLM_CHECK(u.listed, "block not evictable");
  order_.erase(entry(id));
  u.listed = false;
}

BlockId EvictionOrder::victim() const { return order_.empty() ? kNoBlock : order_.begin()->id; }

std::vector<BlockId> EvictionOrder::unused_since(double cutoff) const {
  std::vector<BlockId> out;
  // Each level is a run sorted by last use: its expired blocks lead it.
  for (bool hot : {false, true})
    for (auto it = order_.lower_bound(Entry{hot, std::numeric_limits<double>::lowest(), 0, 0}); it != order_.end() && it->hot == hot; ++it) {
      if (it->last_use >= cutoff) break;
      out.push_back(it->id);
    }
  return out;
}

}  // namespace clm
