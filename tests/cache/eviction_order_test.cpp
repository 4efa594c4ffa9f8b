// The order idle cached blocks leave the pool in: normal before hot, least
// recently used first within a level, ties in the order they became
// evictable; the expired ones per level, oldest first.
#include <gtest/gtest.h>

#include "cache/eviction_order.h"

namespace clm {
namespace {

std::vector<BlockId> drain(EvictionOrder& order) {
  std::vector<BlockId> out;
  for (BlockId id = order.victim(); id != kNoBlock; id = order.victim()) {
    out.push_back(id);
    order.delist(id);
  }
  return out;
}

TEST(EvictionOrder, NormalBlocksGoBeforeHotOnesLeastRecentlyUsedFirst) {
  EvictionOrder order(6, /*hot_after_hits=*/2);
  for (BlockId id = 0; id < 6; ++id) order.reset(id, 10.0 + id);
  EXPECT_TRUE(order.count_hit(1)) << "the first hit is said";
  EXPECT_FALSE(order.count_hit(1));
  for (BlockId id : {5, 1, 3, 0, 4, 2}) order.enlist(id);  // 1 is hot
  EXPECT_EQ(order.victim(), 0);
  EXPECT_EQ(drain(order), (std::vector<BlockId>{0, 2, 3, 4, 5, 1}));
}

TEST(EvictionOrder, AnOldParentGoesAheadAndATouchMovesABlockBack) {
  EvictionOrder order(4, 2);
  order.reset(0, 1.0);  // the parent, used long ago
  for (BlockId id = 1; id < 4; ++id) order.reset(id, 5.0 + id);
  for (BlockId id = 1; id < 4; ++id) order.enlist(id);
  order.enlist(0);  // became a leaf last, but is the oldest
  EXPECT_EQ(order.victim(), 0);
  order.touch(0, 100.0);  // reused in place (a partial-block copy)
  EXPECT_EQ(drain(order), (std::vector<BlockId>{1, 2, 3, 0}));
}

TEST(EvictionOrder, EqualTimesKeepTheOrderTheyBecameEvictableIn) {
  EvictionOrder order(3, 2);
  for (BlockId id = 0; id < 3; ++id) order.reset(id, 7.0);
  for (BlockId id : {2, 0, 1}) order.enlist(id);
  EXPECT_EQ(drain(order), (std::vector<BlockId>{2, 0, 1}));
}

TEST(EvictionOrder, TheExpiredAreEachLevelsOldest) {
  EvictionOrder order(5, 1);
  for (BlockId id = 0; id < 5; ++id) order.reset(id, 1.0 + id);
  order.count_hit(4);  // hot, and old enough
  order.count_hit(0);  // hot, oldest
  for (BlockId id = 0; id < 5; ++id) order.enlist(id);
  EXPECT_EQ(order.unused_since(4.5), (std::vector<BlockId>{1, 2, 3, 0}));
  EXPECT_TRUE(order.unused_since(0.5).empty());
  order.delist(2);
  EXPECT_FALSE(order.listed(2));
  EXPECT_EQ(order.unused_since(10.0), (std::vector<BlockId>{1, 3, 0, 4}));
}

}  // namespace
}  // namespace clm
