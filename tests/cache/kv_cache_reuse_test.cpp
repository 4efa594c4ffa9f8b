// Reuse beyond shared whole blocks: twins computed concurrently converge on
// one copy, a partly matching cached block lends its leading tokens, and a
// finished sequence's partly filled tail is kept for the next turn.
#include "cache/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <vector>

#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;

TEST(KvCacheManager, ExactMultiplePromptComputesItsLastBlock) {
  CacheHarness h(8);
  const auto prompt = iota_tokens(1, 8);  // exactly two blocks
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, prompt), 0);
  EXPECT_EQ(h.cache().stats().blocks_ever_cached, 2u);
  // The last token must be computed for its logits: only block 0 attaches.
  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 4);
  ASSERT_EQ(h.run(b, prompt), 4);
  ASSERT_EQ(b.table.blocks().size(), 2u);
  EXPECT_EQ(b.table.blocks()[0], a.table.blocks()[0]);
  // b recomputed block 1 (for its last token's logits); at commit its copy
  // has the key a's block holds, so b adopts a's block and frees its own.
  EXPECT_EQ(b.table.blocks()[1], a.table.blocks()[1]);
  EXPECT_EQ(h.pool().refcount(a.table.blocks()[1]), 2);
  EXPECT_EQ(h.cache().stats().blocks_deduplicated, 1u);
  EXPECT_EQ(h.cache().stats().blocks_ever_cached, 2u);
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(b);
  EXPECT_EQ(h.pool().refcount(a.table.blocks()[0]), 1);
  h.cache().release(a);
  EXPECT_EQ(h.cache().stats().blocks_cached, 2u);
  // A prompt one token longer now attaches both blocks.
  auto longer = prompt;
  longer.push_back(9);
  EXPECT_EQ(h.cache().match_prefix(longer, 0), 8);
}

// Two sequences admitted together both compute the same prefix; the second
// to commit adopts the first one's registered blocks and frees its own.
TEST(KvCacheManager, ConcurrentTwinsAreDeduplicatedAtCommit) {
  CacheHarness h(16);
  const auto prompt = iota_tokens(100, 10);  // 2 full blocks + 2 tokens
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.cache().begin(a, prompt, 0), 0);
  ASSERT_EQ(h.cache().begin(b, prompt, 0), 0);  // nothing registered yet
  ASSERT_TRUE(h.cache().reserve(a, 10));
  ASSERT_TRUE(h.cache().reserve(b, 10));
  h.append(a, prompt);
  h.append(b, prompt);
  const std::size_t free_before = h.pool().n_free();
  const BlockId b_first = b.table.blocks()[0];
  h.cache().commit(a);
  h.cache().commit(b);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.table.blocks()[i], a.table.blocks()[i]) << "block " << i;
    EXPECT_EQ(h.pool().refcount(a.table.blocks()[i]), 2);
  }
  EXPECT_NE(b.table.blocks()[2], a.table.blocks()[2]);  // partial: never shared
  EXPECT_TRUE(h.pool().is_free(b_first));
  EXPECT_EQ(h.pool().n_free(), free_before + 2);
  EXPECT_EQ(h.cache().stats().blocks_deduplicated, 2u);
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(a);
  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 8);  // still resident through b
  h.cache().release(b);
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), h.pool().n_blocks());
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;

CacheOptions with_partial_reuse() {
  CacheOptions o;
  o.partial_block_reuse = true;
  return o;
}

// A prompt that continues a cached block for only part of it reuses those
// leading tokens by copying them into a block of its own.
TEST(KvCachePartialReuse, CopiesTheLeadingTokensOfAPartlyMatchingBlock) {
  CacheHarness h(16, with_partial_reuse());
  const auto first = iota_tokens(100, 12);  // 3 full blocks
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, first), 0);
  auto second = iota_tokens(100, 6);  // block 0 whole, 2 tokens of block 1...
  second.push_back(7);                // ...then it diverges
  second.push_back(8);
  EXPECT_EQ(h.cache().match_prefix(second, 0), 6);
  ASSERT_EQ(h.run(b, second), 6);
  EXPECT_EQ(b.table.blocks()[0], a.table.blocks()[0]);  // shared
  EXPECT_NE(b.table.blocks()[1], a.table.blocks()[1]);  // copied, not shared
  EXPECT_EQ(h.pool().refcount(a.table.blocks()[1]), 1);
  EXPECT_EQ(h.cache().stats().partial_block_hits, 1u);
  EXPECT_EQ(h.cache().stats().reused_tokens, 6u);
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(b));  // the copied slots and the new ones
  h.cache().release(b);
  h.cache().release(a);
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), h.pool().n_blocks());
}

TEST(KvCachePartialReuse, NeverCoversTheLastTokenNorCrossesNamespaces) {
  CacheHarness h(16, with_partial_reuse());
  const auto text = iota_tokens(100, 8);
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(a, text), 0);
  // The same 7 tokens again: all but the last are reused (block 0 whole, 2 copied).
  const auto seven = iota_tokens(100, 7);
  EXPECT_EQ(h.cache().match_prefix(seven, 0), 6);
  EXPECT_EQ(h.cache().match_prefix(seven, 9), 0);
  ASSERT_EQ(h.run(b, seven, 9), 0);
  h.cache().release(a);
  h.cache().release(b);
  // With the source idle and the pool otherwise full, the copy still finds
  // room without evicting its own source.
  ASSERT_EQ(h.run(c, seven), 6);
  EXPECT_TRUE(h.slots_intact(c));
  h.cache().release(c);
}

TEST(KvCachePartialReuse, SkipsTheCopyWhenNoBlockCanBeHad) {
  CacheHarness h(2, with_partial_reuse());
  const auto text = iota_tokens(100, 8);  // both blocks
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, text), 0);
  // a holds both blocks: nothing is free or evictable, so only the shared
  // whole block attaches and the partial copy is skipped.
  const auto seven = iota_tokens(100, 7);
  EXPECT_EQ(h.cache().begin(b, seven, 0), 4);
  EXPECT_EQ(h.cache().stats().partial_block_hits, 0u);
  h.cache().release(b);
  h.cache().release(a);
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;

// A conversation's next turn continues the previous sequence, whose last
// block was only partly filled: that tail is kept at release and its tokens
// are copied, so the next turn computes only what is new.
TEST(KvCachePartialReuse, KeepsAPartlyFilledTailForTheNextTurn) {
  CacheOptions o;
  o.partial_block_reuse = true;
  CacheHarness h(8, o);
  const auto turn1 = iota_tokens(100, 6);  // 1 full block + 2 tokens
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, turn1), 0);
  const BlockId tail = a.table.blocks()[1];
  h.cache().release(a);
  EXPECT_EQ(h.cache().stats().tails_kept, 1u);
  EXPECT_FALSE(h.pool().is_free(tail));  // kept, idle, evictable
  EXPECT_EQ(h.cache().stats().blocks_cached, 2u);
  auto turn2 = turn1;
  for (int32_t t : {7, 8, 9}) turn2.push_back(t);
  EXPECT_EQ(h.cache().match_prefix(turn2, 0), 6);
  ASSERT_EQ(h.run(b, turn2), 6);
  EXPECT_NE(b.table.blocks()[1], tail);  // copied, not shared
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(b);
  // Tails are ordinary idle cached blocks: everything can still be reclaimed.
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), h.pool().n_blocks());
}

}  // namespace
}  // namespace clm
