#include "cache/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <vector>

#include "cache/block_key.h"
#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;
using testing_support::kFingerprint;

std::size_t count_refs(const KvPool& pool) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < pool.n_blocks(); ++i) n += static_cast<std::size_t>(pool.refcount(static_cast<BlockId>(i)));
  return n;
}

// Every field of two stats snapshots (ratios derive from these).
void expect_same_stats(const CacheStats& a, const CacheStats& b) {
  EXPECT_EQ(a.sequences, b.sequences);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.reused_tokens, b.reused_tokens);
  EXPECT_EQ(a.blocks_looked_up, b.blocks_looked_up);
  EXPECT_EQ(a.blocks_hit, b.blocks_hit);
  EXPECT_EQ(a.blocks_total, b.blocks_total);
  EXPECT_EQ(a.blocks_used, b.blocks_used);
  EXPECT_EQ(a.blocks_cached, b.blocks_cached);
  EXPECT_EQ(a.blocks_free, b.blocks_free);
  EXPECT_EQ(a.blocks_ever_cached, b.blocks_ever_cached);
  EXPECT_EQ(a.cached_blocks_hit, b.cached_blocks_hit);
  EXPECT_EQ(a.evictions_capacity, b.evictions_capacity);
  EXPECT_EQ(a.evictions_ttl, b.evictions_ttl);
  EXPECT_EQ(a.copy_on_write, b.copy_on_write);
}

// ---- sharing ----

TEST(KvCacheManager, SecondSequenceAttachesSharedFullBlocks) {
  CacheHarness h(16);
  const auto prompt = iota_tokens(100, 10);  // blocks: 4 + 4 full, 2 partial
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, prompt), 0);
  ASSERT_EQ(a.table.blocks().size(), 3u);
  EXPECT_EQ(a.keys.size(), 2u);

  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 8);
  ASSERT_EQ(h.run(b, prompt), 8);
  ASSERT_EQ(b.table.blocks().size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.table.blocks()[i], a.table.blocks()[i]);
    EXPECT_EQ(h.pool().refcount(a.table.blocks()[i]), 2);
  }
  // The partial last block is computed, never shared.
  EXPECT_NE(b.table.blocks()[2], a.table.blocks()[2]);
  EXPECT_EQ(h.pool().refcount(b.table.blocks()[2]), 1);
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(b));
  EXPECT_EQ(b.table.positions()[7], 7);
  h.cache().release(a);
  h.cache().release(b);
}

TEST(KvCacheManager, TooShortPromptsAttachNothing) {
  CacheHarness h(4);
  CachedSequence a(kBlockSize), b(kBlockSize);
  const auto prompt = iota_tokens(1, 5);
  ASSERT_EQ(h.run(a, prompt), 0);
  EXPECT_EQ(h.cache().match_prefix(std::span(prompt).first(4), 0), 0);
  EXPECT_EQ(h.cache().match_prefix(std::span(prompt).first(1), 0), 0);
  EXPECT_EQ(h.cache().match_prefix({}, 0), 0);
  EXPECT_EQ(h.run(b, std::span(prompt).first(1)), 0);
  h.cache().release(a);
  h.cache().release(b);
}

TEST(KvCacheManager, NamespacesNeverShare) {
  CacheHarness h(16);
  const auto prompt = iota_tokens(7, 9);
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(a, prompt, 1), 0);
  EXPECT_EQ(h.cache().match_prefix(prompt, 1), 8);
  EXPECT_EQ(h.cache().match_prefix(prompt, 2), 0);
  ASSERT_EQ(h.run(b, prompt, 2), 0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NE(a.table.blocks()[i], b.table.blocks()[i]);
  h.cache().release(a);
  h.cache().release(b);
  EXPECT_EQ(h.cache().stats().blocks_cached, 4u);  // two full blocks per namespace
  // Each namespace gets its own blocks back, with its own K/V.
  ASSERT_EQ(h.run(c, prompt, 2), 8);
  EXPECT_TRUE(h.slots_intact(c));
  h.cache().release(c);
}

TEST(KvCacheManager, BlockKeyCoversParentTokensFingerprintAndNamespace) {
  const auto tokens = iota_tokens(3, kBlockSize);
  const KeyContext base{kFingerprint, 0};
  const BlockKey k = block_key(kNoKey, tokens, base);
  EXPECT_NE(k, kNoKey);
  EXPECT_EQ(k, block_key(kNoKey, tokens, base));
  EXPECT_NE(k, block_key(k, tokens, base));
  EXPECT_NE(k, block_key(kNoKey, tokens, KeyContext{kFingerprint + 1, 0}));
  EXPECT_NE(k, block_key(kNoKey, tokens, KeyContext{kFingerprint, 1}));
  auto other = tokens;
  other[2] += 1;
  EXPECT_NE(k, block_key(kNoKey, other, base));
  EXPECT_NE(k, block_key(kNoKey, std::span(tokens).first(3), base));
}

TEST(KvCacheManager, KeysUseTheManagersFingerprint) {
  std::vector<KeyContext> seen;
  CacheDeps deps;
  deps.key_function = [&seen](BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) {
    seen.push_back(context);
    return block_key(parent, tokens, context);
  };
  CacheHarness h(8, testing_support::whole_blocks_only(), deps);
  CachedSequence a(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(1, 9), 5), 0);
  ASSERT_FALSE(seen.empty());
  for (const KeyContext& c : seen) {
    EXPECT_EQ(c.model_fingerprint, kFingerprint);
    EXPECT_EQ(c.cache_namespace, 5u);
  }
  h.cache().release(a);
}

TEST(KvCacheManager, DifferenceInBlockKSharesOnlyEarlierBlocks) {
  CacheHarness h(32);
  const auto prompt = iota_tokens(50, 4 * kBlockSize + 1);
  CachedSequence a(kBlockSize);
  ASSERT_EQ(h.run(a, prompt), 0);
  for (int k = 0; k < 4; ++k) {
    auto variant = prompt;
    variant[static_cast<std::size_t>(k * kBlockSize + 2)] = 999;
    EXPECT_EQ(h.cache().match_prefix(variant, 0), k * kBlockSize) << "k=" << k;
    CachedSequence b(kBlockSize);
    ASSERT_EQ(h.run(b, variant), k * kBlockSize);
    for (std::size_t i = 0; i < 4; ++i) {
      if (i < static_cast<std::size_t>(k))
        EXPECT_EQ(b.table.blocks()[i], a.table.blocks()[i]);
      else
        EXPECT_NE(b.table.blocks()[i], a.table.blocks()[i]);
    }
    EXPECT_TRUE(h.slots_intact(b));
    h.cache().release(b);
  }
  EXPECT_TRUE(h.slots_intact(a));
  h.cache().release(a);
}

TEST(KvCacheManager, DisabledPrefixCachingSharesNothing) {
  CacheOptions options = testing_support::whole_blocks_only();
  options.prefix_caching = false;
  CacheHarness h(8, options);
  const auto prompt = iota_tokens(1, 9);
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, prompt), 0);
  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 0);
  h.cache().release(a);
  EXPECT_EQ(h.pool().n_free(), 8u);
  ASSERT_EQ(h.run(b, prompt), 0);
  h.cache().release(b);
  EXPECT_EQ(h.cache().stats().blocks_ever_cached, 0u);
}

// ---- copy-on-write ----

TEST(KvCacheManager, ForkCopiesPartialBlockOnFirstWrite) {
  CacheHarness h(8);
  CachedSequence a(kBlockSize), f(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(10, 6)), 0);  // block 0 full, block 1 holds 2
  h.cache().fork(a, f);
  ASSERT_EQ(f.table.blocks(), a.table.blocks());
  EXPECT_EQ(f.table.tokens(), a.table.tokens());
  EXPECT_EQ(f.keys, a.keys);
  for (BlockId id : a.table.blocks()) EXPECT_EQ(h.pool().refcount(id), 2);

  ASSERT_TRUE(h.cache().reserve(f, 1));
  const BlockId original = a.table.blocks()[1];
  const BlockId copy = f.table.blocks()[1];
  EXPECT_NE(copy, original);
  EXPECT_EQ(f.table.blocks()[0], a.table.blocks()[0]);
  EXPECT_EQ(h.pool().refcount(original), 1);
  EXPECT_EQ(h.pool().refcount(copy), 1);
  EXPECT_EQ(h.cache().stats().copy_on_write, 1u);
  // The copy carries the K/V of the two tokens already there.
  EXPECT_TRUE(h.slots_intact(f));
  const std::vector<int32_t> fork_token{77};
  h.append(f, fork_token);
  const std::vector<int32_t> own_token{88};
  ASSERT_TRUE(h.cache().reserve(a, 1));  // a's block is no longer shared: no copy
  EXPECT_EQ(a.table.blocks()[1], original);
  EXPECT_EQ(h.cache().stats().copy_on_write, 1u);
  h.append(a, own_token);
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(f));
  EXPECT_EQ(h.read_slot(a, 6).token, 88u);
  EXPECT_EQ(h.read_slot(f, 6).token, 77u);
  h.cache().release(a);
  h.cache().release(f);
  EXPECT_EQ(h.cache().stats().blocks_used, 0u);
}

TEST(KvCacheManager, ForkOfFullBlocksNeedsNoCopy) {
  CacheHarness h(8);
  CachedSequence a(kBlockSize), f(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(10, 8)), 0);
  h.cache().fork(a, f);
  ASSERT_TRUE(h.cache().reserve(f, 1));
  EXPECT_EQ(h.cache().stats().copy_on_write, 0u);
  ASSERT_EQ(f.table.blocks().size(), 3u);
  EXPECT_EQ(h.pool().refcount(f.table.blocks()[2]), 1);
  h.cache().release(a);
  h.cache().release(f);
}

TEST(KvCacheManager, ForkNeverSharesReservedButEmptyRoom) {
  // A block reserved ahead but holding no token yet must not be shared: both
  // sequences would write their next token into it.
  CacheHarness h(8);
  CachedSequence a(kBlockSize), f(kBlockSize);
  ASSERT_EQ(h.cache().begin(a, iota_tokens(1, 4), 0), 0);
  ASSERT_TRUE(h.cache().reserve(a, 8));  // room for 4 more than it appends
  h.append(a, iota_tokens(1, 4));
  h.cache().commit(a);
  ASSERT_EQ(a.table.blocks().size(), 2u);
  h.cache().fork(a, f);
  ASSERT_TRUE(h.cache().reserve(f, 1));
  ASSERT_TRUE(h.cache().reserve(a, 1));
  h.append(f, std::vector<int32_t>{50});
  h.append(a, std::vector<int32_t>{60});
  EXPECT_NE(f.table.blocks()[1], a.table.blocks()[1]);
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(f));
  h.cache().release(a);
  h.cache().release(f);
  EXPECT_EQ(h.cache().stats().blocks_used, 0u);
}

TEST(KvCacheManager, ForkNeverSharesRoomBehindAPartialBlock) {
  CacheHarness h(8);
  CachedSequence a(kBlockSize), f(kBlockSize);
  ASSERT_EQ(h.cache().begin(a, iota_tokens(1, 6), 0), 0);
  ASSERT_TRUE(h.cache().reserve(a, 12));  // three blocks, six slots used
  h.append(a, iota_tokens(1, 6));
  h.cache().fork(a, f);
  // Each writes four tokens: two into its copy of block 1, two into block 2.
  ASSERT_TRUE(h.cache().reserve(f, 4));
  ASSERT_TRUE(h.cache().reserve(a, 4));
  h.append(f, iota_tokens(200, 4));
  h.append(a, iota_tokens(300, 4));
  EXPECT_TRUE(h.slots_intact(a));
  EXPECT_TRUE(h.slots_intact(f));
  h.cache().release(a);
  h.cache().release(f);
  EXPECT_EQ(h.cache().stats().blocks_used, 0u);
}

// ---- references ----

TEST(KvCacheManager, ReleasingEverythingLeaksNothing) {
  CacheHarness h(16);
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize), d(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(1, 11)), 0);
  ASSERT_EQ(h.run(b, iota_tokens(1, 7)), 4);
  h.cache().fork(a, c);
  ASSERT_TRUE(h.cache().reserve(c, 3));
  h.append(c, iota_tokens(40, 3));
  h.cache().commit(c);
  h.cache().fork(c, d);
  EXPECT_EQ(h.pool().refcount(a.table.blocks()[0]), 4);
  for (CachedSequence* s : {&b, &d, &a, &c}) h.cache().release(*s);
  EXPECT_EQ(count_refs(h.pool()), 0u);
  const CacheStats s = h.cache().stats();
  EXPECT_EQ(s.blocks_used, 0u);
  EXPECT_EQ(s.blocks_cached + s.blocks_free, s.blocks_total);
  EXPECT_GT(s.blocks_cached, 0u);
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), h.pool().n_blocks());
  EXPECT_EQ(h.cache().stats().blocks_cached, 0u);
  EXPECT_EQ(h.cache().stats().evictions_capacity, 0u);  // clearing is not a capacity decision
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(1, 11), 0), 0);
}

// ---- eviction order ----

// One registered block per prompt: `first` names the prompt.
std::vector<int32_t> one_block_prompt(int32_t first) { return iota_tokens(first, kBlockSize + 1); }

// Grows `seq` by n whole blocks of uncommitted tokens, evicting as needed.
::testing::AssertionResult grow(CacheHarness& h, CachedSequence& seq, int n) {
  if (auto r = h.cache().reserve(seq, n * kBlockSize); !r)
    return ::testing::AssertionFailure() << r.error().message;
  h.append(seq, iota_tokens(9000 + seq.table.n_slots(), n * kBlockSize));
  return ::testing::AssertionSuccess();
}

// Starts a sequence that holds n blocks of its own.
void take_blocks(CacheHarness& h, CachedSequence& seq, int n) {
  ASSERT_EQ(h.cache().begin(seq, {}, 0), 0);
  ASSERT_TRUE(grow(h, seq, n));
}

TEST(KvCacheManager, EvictsLeastRecentlyUsedFirst) {
  CacheHarness h(5);
  for (int32_t p : {100, 200, 300}) {
    CachedSequence s(kBlockSize);
    h.now += 1;
    ASSERT_EQ(h.run(s, one_block_prompt(p)), 0);
    h.cache().release(s);
  }
  ASSERT_EQ(h.cache().stats().blocks_cached, 3u);
  // Touch 100: now 200 is the least recently used.
  {
    CachedSequence s(kBlockSize);
    h.now += 1;
    ASSERT_EQ(h.run(s, one_block_prompt(100)), kBlockSize);
    h.cache().release(s);
  }
  CachedSequence big(kBlockSize);
  take_blocks(h, big, 3);  // 2 free + 1 eviction
  EXPECT_EQ(h.cache().stats().evictions_capacity, 1u);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(200), 0), 0);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(300), 0), kBlockSize);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(100), 0), kBlockSize);
  ASSERT_TRUE(grow(h, big, 1));
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(300), 0), 0);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(100), 0), kBlockSize);
  h.cache().release(big);
}

TEST(KvCacheManager, EvictsNormalLevelBeforeHot) {
  CacheOptions options = testing_support::whole_blocks_only();
  options.hot_after_hits = 2;
  CacheHarness h(5, options);
  for (int i = 0; i < 3; ++i) {  // computed once, then hit twice: hot
    CachedSequence s(kBlockSize);
    h.now += 1;
    ASSERT_EQ(h.run(s, one_block_prompt(100)), i == 0 ? 0 : kBlockSize);
    h.cache().release(s);
  }
  for (int32_t p : {200, 300}) {  // newer, but normal
    CachedSequence s(kBlockSize);
    h.now += 1;
    ASSERT_EQ(h.run(s, one_block_prompt(p)), 0);
    h.cache().release(s);
  }
  ASSERT_EQ(h.cache().stats().blocks_cached, 3u);
  CachedSequence big(kBlockSize);
  take_blocks(h, big, 4);  // two evictions: both normal blocks
  EXPECT_EQ(h.cache().stats().evictions_capacity, 2u);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(100), 0), kBlockSize);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(200), 0), 0);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(300), 0), 0);
  ASSERT_TRUE(grow(h, big, 1));  // the hot one goes last
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(100), 0), 0);
  h.cache().release(big);
}

TEST(KvCacheManager, EvictsLeavesBeforeParents) {
  // With a frozen clock every block ties on recency: only the structure
  // decides, and the chain must shrink from its tail.
  CacheHarness h(7);
  const auto chain = iota_tokens(1, 3 * kBlockSize + 1);  // three registered blocks
  {
    CachedSequence s(kBlockSize);
    ASSERT_EQ(h.run(s, chain), 0);
    h.cache().release(s);
  }
  ASSERT_EQ(h.cache().stats().blocks_cached, 3u);
  CachedSequence big(kBlockSize);
  take_blocks(h, big, 4);  // 4 free, nothing evicted yet
  EXPECT_EQ(h.cache().match_prefix(chain, 0), 3 * kBlockSize);
  for (int left = 2; left >= 0; --left) {
    ASSERT_TRUE(grow(h, big, 1));
    // The remaining blocks are still a complete, hittable prefix.
    EXPECT_EQ(h.cache().match_prefix(chain, 0), left * kBlockSize);
    EXPECT_EQ(h.cache().stats().blocks_cached, static_cast<std::size_t>(left));
  }
  EXPECT_FALSE(grow(h, big, 1));
  h.cache().release(big);
}

TEST(KvCacheManager, ParentWithReferencedChildIsNeverEvicted) {
  CacheHarness h(6);
  const auto chain = iota_tokens(1, 2 * kBlockSize + 1);
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, chain), 0);
  h.cache().release(a);
  // b holds both blocks of the chain (and computes its own last one).
  ASSERT_EQ(h.run(b, chain), 2 * kBlockSize);
  EXPECT_EQ(h.cache().available_blocks(), 3u);
  CachedSequence big(kBlockSize);
  take_blocks(h, big, 3);
  EXPECT_FALSE(h.cache().reserve(big, 1));
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(big);
  h.cache().release(b);
  EXPECT_EQ(h.cache().match_prefix(chain, 0), 2 * kBlockSize);
}

TEST(KvCacheManager, OlderChainGoesBeforeNewerLeaves) {
  // LRU across chains: the whole older chain (leaf, then its parent) is
  // dropped before the leaf of a chain used later.
  CacheHarness h(8);
  const auto old_chain = iota_tokens(100, 2 * kBlockSize + 1);
  const auto new_chain = iota_tokens(200, 2 * kBlockSize + 1);
  for (const auto* prompt : {&old_chain, &new_chain}) {
    CachedSequence s(kBlockSize);
    h.now += 1;
    ASSERT_EQ(h.run(s, *prompt), 0);
    h.cache().release(s);
  }
  ASSERT_EQ(h.cache().stats().blocks_cached, 4u);
  CachedSequence big(kBlockSize);
  take_blocks(h, big, 6);  // 4 free + 2 evictions
  EXPECT_EQ(h.cache().match_prefix(old_chain, 0), 0);
  EXPECT_EQ(h.cache().match_prefix(new_chain, 0), 2 * kBlockSize);
  h.cache().release(big);
}

// ---- budget ----

TEST(KvCacheManager, FailedReserveChangesNothing) {
  CacheHarness h(6);
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(1, 9)), 0);  // 3 blocks, 2 registered
  h.cache().release(a);                        // 2 cached, 4 free
  ASSERT_EQ(h.run(b, iota_tokens(50, 6)), 0);  // 2 blocks, partial last
  h.cache().fork(b, c);
  ASSERT_EQ(h.cache().available_blocks(), 4u);  // 2 free + 2 cached
  const CacheStats before = h.cache().stats();
  const std::vector<BlockId> blocks_before = c.table.blocks();
  // Copying the shared partial block (1) plus four more blocks (2 + 16) > 4.
  auto r = h.cache().reserve(c, 2 + 4 * kBlockSize);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("kv cache full"), std::string::npos);
  expect_same_stats(before, h.cache().stats());
  EXPECT_EQ(c.table.blocks(), blocks_before);
  EXPECT_EQ(c.table.n_slots(), 6);
  EXPECT_EQ(h.pool().refcount(blocks_before[1]), 2);
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(1, 9), 0), 8);
  // Exactly what is available succeeds: the copy plus three more blocks.
  ASSERT_TRUE(h.cache().reserve(c, 2 + 3 * kBlockSize));
  EXPECT_EQ(h.cache().available_blocks(), 0u);
  EXPECT_EQ(h.cache().stats().copy_on_write, 1u);
  EXPECT_EQ(h.cache().stats().evictions_capacity, 2u);
  EXPECT_EQ(h.cache().stats().blocks_free, 0u);
  EXPECT_TRUE(h.slots_intact(b));
  EXPECT_TRUE(h.slots_intact(c));
  h.cache().release(b);
  h.cache().release(c);
  EXPECT_EQ(h.cache().stats().blocks_used, 0u);
}

TEST(KvCacheManager, AvailableBlocksIsExact) {
  CacheHarness h(10);
  // Two chains of different depth, partly in use.
  CachedSequence a(kBlockSize), b(kBlockSize), keep(kBlockSize);
  ASSERT_EQ(h.run(a, iota_tokens(1, 13)), 0);   // 3 registered + 1 partial
  ASSERT_EQ(h.run(b, iota_tokens(90, 5)), 0);   // 1 registered + 1 partial
  h.cache().release(a);
  h.cache().release(b);
  ASSERT_EQ(h.run(keep, iota_tokens(1, 6)), 4);  // holds a's first block
  const std::size_t available = h.cache().available_blocks();
  const CacheStats s = h.cache().stats();
  EXPECT_EQ(available, s.blocks_free + s.blocks_cached);
  EXPECT_EQ(available, 10u - 2u);
  CachedSequence big(kBlockSize);
  ASSERT_EQ(h.cache().begin(big, iota_tokens(5000, 1), 0), 0);
  EXPECT_FALSE(h.cache().reserve(big, static_cast<int>(available) * kBlockSize + 1));
  ASSERT_TRUE(h.cache().reserve(big, static_cast<int>(available) * kBlockSize));
  EXPECT_EQ(h.cache().available_blocks(), 0u);
  EXPECT_EQ(h.pool().n_free(), 0u);
  EXPECT_TRUE(h.slots_intact(keep));
  h.cache().release(big);
  h.cache().release(keep);
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(1, 6), 0), 4);
}

// ---- hash collisions ----

TEST(KvCacheManager, CollidingKeysNeverGiveAFalseHit) {
  CacheDeps deps;
  deps.key_function = [](BlockKey, std::span<const int32_t>, const KeyContext&) { return BlockKey{42}; };
  CacheHarness h(8, testing_support::whole_blocks_only(), deps);
  const auto prompt = iota_tokens(1, 9);
  CachedSequence a(kBlockSize);
  ASSERT_EQ(h.run(a, prompt), 0);
  // Block 0 took the key; block 1's identical key leaves it unregistered.
  EXPECT_EQ(h.cache().stats().blocks_ever_cached, 1u);
  const BlockId second = a.table.blocks()[1];
  h.cache().release(a);
  EXPECT_TRUE(h.pool().is_free(second));
  EXPECT_EQ(h.cache().stats().blocks_cached, 1u);
  EXPECT_EQ(h.pool().n_free(), 7u);

  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 4);
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(2, 9), 0), 0);
  // A's second block as a first block: same key, other tokens.
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(5, 9), 0), 0);
  // A's first block twice: the second copy has another parent.
  std::vector<int32_t> twice{1, 2, 3, 4, 1, 2, 3, 4, 0};
  EXPECT_EQ(h.cache().match_prefix(twice, 0), 4);

  CachedSequence b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(b, iota_tokens(30, 9)), 0);
  EXPECT_TRUE(h.slots_intact(b));
  ASSERT_EQ(h.run(c, twice), 4);
  EXPECT_TRUE(h.slots_intact(c));
  h.cache().release(b);
  h.cache().release(c);
  EXPECT_EQ(h.cache().stats().blocks_cached, 1u);
  EXPECT_EQ(h.pool().n_free(), 7u);
  EXPECT_EQ(h.cache().match_prefix(iota_tokens(30, 9), 0), 0);
}

TEST(KvCacheManager, CollidingKeysNeverShareAcrossNamespaces) {
  // A first block has no parent: only the namespace tells the two apart.
  CacheDeps deps;
  deps.key_function = [](BlockKey, std::span<const int32_t>, const KeyContext&) { return BlockKey{42}; };
  CacheHarness h(8, testing_support::whole_blocks_only(), deps);
  const auto prompt = iota_tokens(1, 5);
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, prompt, 0), 0);
  h.cache().release(a);
  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 4);
  EXPECT_EQ(h.cache().match_prefix(prompt, 1), 0);
  ASSERT_EQ(h.run(b, prompt, 1), 0);
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(b);
}

TEST(KvCacheManager, KeyIgnoringTheParentStillNeedsTheWholePrefix) {
  // A weak key (tokens only) collides whenever a block recurs after another
  // prefix; the stored parent must tell them apart.
  CacheDeps deps;
  deps.key_function = [](BlockKey, std::span<const int32_t> tokens, const KeyContext& context) {
    return block_key(kNoKey, tokens, context);
  };
  CacheHarness h(12, testing_support::whole_blocks_only(), deps);
  std::vector<int32_t> x{1, 1, 1, 1, 7, 7, 7, 7, 0};
  std::vector<int32_t> y{2, 2, 2, 2, 7, 7, 7, 7, 0};
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(a, x), 0);
  h.cache().release(a);
  EXPECT_EQ(h.cache().match_prefix(y, 0), 0);
  ASSERT_EQ(h.run(b, y), 0);
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(b);
  ASSERT_EQ(h.run(c, y), 4);  // y's block 0, never x's block 1
  EXPECT_TRUE(h.slots_intact(c));
  h.cache().release(c);
  EXPECT_EQ(h.cache().match_prefix(x, 0), 8);
}

// ---- time-to-live ----

TEST(KvCacheManager, SweepDropsOnlyExpiredIdleBlocks) {
  CacheOptions options = testing_support::whole_blocks_only();
  options.ttl_seconds = 10.0;
  CacheHarness h(12, options);
  CachedSequence a(kBlockSize), b(kBlockSize), held(kBlockSize);
  h.now = 0.0;
  ASSERT_EQ(h.run(a, one_block_prompt(100)), 0);
  ASSERT_EQ(h.run(held, one_block_prompt(300)), 0);  // stays referenced
  h.cache().release(a);
  h.now = 5.0;
  ASSERT_EQ(h.run(b, one_block_prompt(200)), 0);
  h.cache().release(b);
  h.now = 10.0;  // a idle for exactly the TTL: not yet expired
  EXPECT_EQ(h.cache().sweep_expired(), 0u);
  h.now = 12.0;
  EXPECT_EQ(h.cache().sweep_expired(), 1u);
  EXPECT_EQ(h.cache().stats().evictions_ttl, 1u);
  EXPECT_EQ(h.cache().stats().evictions_capacity, 0u);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(100), 0), 0);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(200), 0), kBlockSize);
  h.now = 100.0;
  EXPECT_EQ(h.cache().sweep_expired(), 1u);
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(200), 0), 0);
  // The referenced block is never dropped, however old.
  EXPECT_EQ(h.cache().match_prefix(one_block_prompt(300), 0), kBlockSize);
  EXPECT_TRUE(h.slots_intact(held));
  EXPECT_EQ(h.cache().stats().blocks_cached, 0u);
  h.cache().release(held);
  EXPECT_EQ(h.cache().stats().blocks_cached, 1u);
  h.now = 105.0;
  EXPECT_EQ(h.cache().sweep_expired(), 0u);  // idle since release, not since creation
}

TEST(KvCacheManager, SweepDropsAnExpiredChainWholeButKeepsLiveParents) {
  CacheOptions options = testing_support::whole_blocks_only();
  options.ttl_seconds = 10.0;
  CacheHarness h(12, options);
  const auto chain = iota_tokens(1, 3 * kBlockSize + 1);
  CachedSequence a(kBlockSize), b(kBlockSize);
  ASSERT_EQ(h.run(a, chain), 0);
  h.cache().release(a);
  h.now = 20.0;
  EXPECT_EQ(h.cache().sweep_expired(), 3u);
  EXPECT_EQ(h.cache().stats().evictions_ttl, 3u);
  EXPECT_EQ(h.pool().n_free(), 12u);

  ASSERT_EQ(h.run(a, chain), 0);
  h.cache().release(a);
  h.now = 25.0;
  // b hits the first block at 25: it is fresh, its expired children are not.
  ASSERT_EQ(h.run(b, iota_tokens(1, kBlockSize + 1)), kBlockSize);
  h.cache().release(b);
  h.now = 31.0;
  EXPECT_EQ(h.cache().sweep_expired(), 2u);
  EXPECT_EQ(h.cache().match_prefix(chain, 0), kBlockSize);
}

TEST(KvCacheManager, SweepWithoutTtlDropsNothing) {
  CacheHarness h(4);
  CachedSequence a(kBlockSize);
  ASSERT_EQ(h.run(a, one_block_prompt(1)), 0);
  h.cache().release(a);
  h.now = 1e9;
  EXPECT_EQ(h.cache().sweep_expired(), 0u);
  EXPECT_EQ(h.cache().stats().blocks_cached, 1u);
}

// ---- stats ----

TEST(KvCacheManager, StatsFollowAScriptedScenario) {
  CacheHarness h(10);
  const auto p = iota_tokens(1, 13);  // 3 full blocks looked up, 1 partial
  CachedSequence a(kBlockSize), b(kBlockSize), c(kBlockSize);
  ASSERT_EQ(h.run(a, p), 0);
  h.cache().release(a);
  ASSERT_EQ(h.run(b, p), 12);  // 3 of 3 blocks hit
  auto q = p;
  q[5] = 0;  // differs in block 1
  ASSERT_EQ(h.run(c, q), 4);  // 1 of 3 hit
  const CacheStats s = h.cache().stats();
  EXPECT_EQ(s.sequences, 3u);
  EXPECT_EQ(s.prompt_tokens, 39u);
  EXPECT_EQ(s.reused_tokens, 16u);
  EXPECT_EQ(s.blocks_looked_up, 9u);
  EXPECT_EQ(s.blocks_hit, 4u);
  EXPECT_DOUBLE_EQ(s.block_hit_rate(), 4.0 / 9.0);
  EXPECT_DOUBLE_EQ(s.token_hit_rate(), 16.0 / 39.0);
  // Registered: a's 3 blocks, c's blocks 1 and 2. Hit at least once: a's 3.
  EXPECT_EQ(s.blocks_ever_cached, 5u);
  EXPECT_EQ(s.cached_blocks_hit, 3u);
  EXPECT_DOUBLE_EQ(s.cache_efficiency_ratio(), 3.0 / 5.0);
  // In use: a's 3 shared + b's partial + c's 3 own blocks; a's partial was freed.
  EXPECT_EQ(s.blocks_total, 10u);
  EXPECT_EQ(s.blocks_used, 7u);
  EXPECT_EQ(s.blocks_cached, 0u);
  EXPECT_EQ(s.blocks_free, 3u);
  EXPECT_EQ(s.block_bytes, 128u);
  EXPECT_DOUBLE_EQ(s.memory_used_mb(), 7.0 * 128.0 / (1024.0 * 1024.0));

  h.cache().release(b);
  h.cache().release(c);
  const CacheStats t = h.cache().stats();
  EXPECT_EQ(t.blocks_used, 0u);
  EXPECT_EQ(t.blocks_cached, 5u);
  EXPECT_EQ(t.blocks_free, 5u);
  EXPECT_DOUBLE_EQ(t.memory_used_mb(), 5.0 * 128.0 / (1024.0 * 1024.0));
  EXPECT_EQ(CacheStats{}.block_hit_rate(), 0.0);
  EXPECT_EQ(CacheStats{}.token_hit_rate(), 0.0);
  EXPECT_EQ(CacheStats{}.cache_efficiency_ratio(), 0.0);
}

}  // namespace
}  // namespace clm
