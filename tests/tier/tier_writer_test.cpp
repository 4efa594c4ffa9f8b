#include "tier/tier_writer.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tier/memory_tier.h"
#include "support/tier_entries.h"

namespace clm {
namespace {

TEST(TierWriter, WritesEveryEntryToEveryTier) {
  test::MemoryTier a("a"), b("b");
  TierWriter w({&a, &b}, 1 << 20);
  for (const TierEntry& e : test::chain_entries(7, 5)) EXPECT_TRUE(w.enqueue(e));
  w.flush();
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(w.queued(), 5u);
  EXPECT_EQ(w.dropped(), 0u);
  EXPECT_EQ(w.pending(), 0u);
  EXPECT_EQ(w.counts()[1].written, 5u);
}

TEST(TierWriter, AFullQueueDropsAndCountsWithoutWaiting) {
  test::MemoryTier slow;
  slow.block_puts(true);  // the tier hangs: nothing leaves the queue
  const auto entries = test::chain_entries(7, 40);
  const std::size_t one = entries[0].kv.size() + 8 * entries[0].tokens.size() + 64;
  TierWriter w({&slow}, 4 * one);
  const auto t0 = std::chrono::steady_clock::now();
  int accepted = 0;
  for (const TierEntry& e : entries) accepted += w.enqueue(e) ? 1 : 0;
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(spent, 0.5) << "enqueue never waits for the tier";
  // Four fit (the one stuck in put still counts against the bound).
  EXPECT_EQ(accepted, 4);
  EXPECT_EQ(w.dropped(), static_cast<uint64_t>(40 - accepted));
  EXPECT_FALSE(w.has_room(entries[0].kv.size(), entries[0].tokens.size()));
  slow.block_puts(false);
  w.flush();
  EXPECT_EQ(slow.size(), static_cast<std::size_t>(accepted));
  EXPECT_TRUE(w.has_room(entries[0].kv.size(), entries[0].tokens.size()));
}

TEST(TierWriter, DestructionWritesWhatIsQueued) {
  test::MemoryTier t;
  {
    TierWriter w({&t}, 1 << 20);
    for (const TierEntry& e : test::chain_entries(7, 6)) w.enqueue(e);
  }
  EXPECT_EQ(t.size(), 6u);
}

}  // namespace
}  // namespace clm
