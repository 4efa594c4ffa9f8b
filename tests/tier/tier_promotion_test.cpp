// Tiers under the cache manager without a model: TierSet's chain fetch over
// tiers in order, the manager's adoption of fetched entries (checked, only
// under a resident parent) and its write-through of computed blocks.
#include <gtest/gtest.h>

#include <cstring>

#include "cache/kv_cache_manager.h"
#include "tier/memory_tier.h"
#include "tier/tier_set.h"
#include "support/tier_entries.h"

namespace clm {
namespace {

using test::MemoryTier;

constexpr uint64_t kFingerprint = 0xfeed;

struct Cache {
  explicit Cache(std::size_t n_blocks, CacheObserver* observer = nullptr) {
    pool = std::move(*KvPool::create(test::small_tier_geometry(), n_blocks));
    CacheDeps deps;
    deps.observer = observer;
    manager = std::make_unique<KvCacheManager>(*pool, kFingerprint, CacheOptions{}, deps);
  }
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvCacheManager> manager;
};

// 14 tokens 10..23: three full blocks of four and two more.
std::vector<int32_t> prompt() {
  std::vector<int32_t> p;
  for (int i = 0; i < 14; ++i) p.push_back(10 + i);
  return p;
}

// The entries a tier would hold for the prompt's three blocks, as a fetch
// that read them into their own buffers returns them.
std::vector<LandedEntry> entries_for(const KvCacheManager& m) {
  const auto keys = m.prompt_keys(prompt(), 0);
  EXPECT_EQ(keys.size(), 3u);
  std::vector<LandedEntry> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    LandedEntry e;
    static_cast<TierEntry&>(e) =
        test::chain_entry(kFingerprint, keys[i], i == 0 ? kNoKey : keys[i - 1], static_cast<int>(i));
    out.push_back(std::move(e));
  }
  return out;
}

TEST(TierPromotion, AdoptedBlocksAreAnOrdinaryPrefixHitWithTheTiersBytes) {
  Cache c(8);
  const auto entries = entries_for(*c.manager);
  EXPECT_EQ(c.manager->adopt(prompt(), 0, entries), 3u);
  EXPECT_EQ(c.manager->match_prefix(prompt(), 0), 12);
  EXPECT_EQ(c.manager->match_prefix(prompt(), 1), 0) << "another namespace shares nothing";
  CachedSequence seq(4);
  EXPECT_EQ(c.manager->begin(seq, prompt(), 0), 12);
  for (std::size_t b = 0; b < 3; ++b)
    EXPECT_EQ(std::memcmp(c.pool->block_data(seq.table.blocks()[b]), entries[b].kv.data(), entries[b].kv.size()), 0);
  c.manager->release(seq);
  EXPECT_EQ(c.manager->stats().blocks_cached, 3u);
  // Adopting again changes nothing: the blocks are resident.
  EXPECT_EQ(c.manager->adopt(prompt(), 0, entries), 0u);
}

TEST(TierPromotion, NoChildIsAdoptedWithoutItsParent) {
  Cache c(8);
  auto entries = entries_for(*c.manager);
  entries.erase(entries.begin());
  EXPECT_EQ(c.manager->adopt(prompt(), 0, entries), 0u);
  EXPECT_EQ(c.manager->match_prefix(prompt(), 0), 0);
  EXPECT_EQ(c.manager->stats().blocks_cached, 0u);
}

TEST(TierPromotion, AnEntryThatDoesNotFitThePromptEndsAdoption) {
  auto with = [](auto edit) {
    Cache c(8);
    auto entries = entries_for(*c.manager);
    edit(entries[1]);
    const std::size_t n = c.manager->adopt(prompt(), 0, entries);
    EXPECT_EQ(c.manager->match_prefix(prompt(), 0), static_cast<int>(4 * n));
    return n;
  };
  EXPECT_EQ(with([](TierEntry& e) { e.tokens[2] += 1; }), 1u) << "other tokens (a hash collision)";
  EXPECT_EQ(with([](TierEntry& e) { e.positions[0] += 4; }), 1u) << "computed at other positions";
  EXPECT_EQ(with([](TierEntry& e) { e.parent ^= 1; }), 1u) << "another parent";
  EXPECT_EQ(with([](TierEntry& e) { e.model_fingerprint ^= 1; }), 1u) << "another model";
  EXPECT_EQ(with([](TierEntry& e) { e.kv.pop_back(); }), 1u) << "short bytes";
  EXPECT_EQ(with([](TierEntry& e) { e.geometry.types = KvType::F32; }), 1u) << "another KV layout";
}

TEST(TierPromotion, ASmallPoolAdoptsWhatFitsWithoutEvictingTheChain) {
  Cache c(2);
  EXPECT_EQ(c.manager->adopt(prompt(), 0, entries_for(*c.manager)), 2u);
  EXPECT_EQ(c.manager->match_prefix(prompt(), 0), 8);
}

TEST(TierPromotion, FetchReadsTheChainFromTheFirstTierHoldingEachPart) {
  auto fast = std::make_unique<MemoryTier>("fast");
  auto slow = std::make_unique<MemoryTier>("slow");
  Cache probe(1);
  const auto entries = entries_for(*probe.manager);
  for (std::size_t i = 0; i < 2; ++i) fast->put(entries[i]);
  for (const auto& e : entries) slow->put(e);
  MemoryTier* fast_raw = fast.get();
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::move(fast));
  tiers.push_back(std::move(slow));
  TierSet set(std::move(tiers), kFingerprint, test::small_tier_geometry(), 1 << 20);
  const auto keys = probe.manager->prompt_keys(prompt(), 0);
  const auto got = set.fetch(keys);
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i].key, keys[i]);
  TierStats s = set.stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_EQ(s.tiers[0].name, "fast");
  EXPECT_EQ(s.tiers[0].hits, 2u);
  EXPECT_EQ(s.tiers[0].misses, 1u);
  EXPECT_EQ(s.tiers[1].hits, 1u);
  EXPECT_EQ(s.tiers[1].misses, 0u);
  EXPECT_DOUBLE_EQ(s.tiers[0].hit_rate(), 2.0 / 3.0);

  // Blocks resident in RAM are not asked for.
  Cache c(8, &set);
  EXPECT_EQ(c.manager->adopt(prompt(), 0, got), 3u);
  const int gets_before = fast_raw->gets();
  EXPECT_TRUE(set.fetch(keys).empty());
  EXPECT_EQ(fast_raw->gets(), gets_before);
  // Once evicted they are asked for again.
  c.manager->clear_cached();
  EXPECT_EQ(set.fetch(keys).size(), 3u);
}

// Tiers fast and slow (in that order) in a TierSet; raw pointers stay valid.
struct TwoTiers {
  TwoTiers() {
    auto f = std::make_unique<MemoryTier>("fast");
    auto s = std::make_unique<MemoryTier>("slow");
    fast = f.get();
    slow = s.get();
    std::vector<std::unique_ptr<CacheTier>> tiers;
    tiers.push_back(std::move(f));
    tiers.push_back(std::move(s));
    set = std::make_unique<TierSet>(std::move(tiers), kFingerprint, test::small_tier_geometry(), 1 << 20);
  }
  MemoryTier* fast;
  MemoryTier* slow;
  std::unique_ptr<TierSet> set;
};

TEST(TierPromotion, NothingIsPromotedUnderAParentGoneFromRamAndEveryTier) {
  TwoTiers t;
  Cache c(8, t.set.get());
  const auto entries = entries_for(*c.manager);
  const auto keys = c.manager->prompt_keys(prompt(), 0);
  // The tiers hold the children; the first block is nowhere.
  t.fast->put(entries[1]);
  t.slow->put(entries[1]);
  t.slow->put(entries[2]);
  EXPECT_TRUE(t.set->fetch(keys).empty());

  // The first block resident in RAM: its children are fetched; it is then
  // evicted before they are adopted, and they are not.
  ASSERT_EQ(c.manager->adopt(prompt(), 0, std::span(entries).first(1)), 1u);
  const auto children = t.set->fetch(keys);
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0].key, keys[1]);
  c.manager->clear_cached();
  EXPECT_EQ(c.manager->adopt(prompt(), 0, children), 0u);
  EXPECT_EQ(c.manager->match_prefix(prompt(), 0), 0);
  EXPECT_EQ(c.manager->stats().blocks_cached, 0u);
}

TEST(TierPromotion, AnEntryNamingAnotherParentEndsTheFetch) {
  TwoTiers t;
  Cache probe(1);
  auto entries = entries_for(*probe.manager);
  entries[1].parent ^= 1;  // a tier that lost track of the chain
  for (const auto& e : entries) t.fast->put(e);
  const auto keys = probe.manager->prompt_keys(prompt(), 0);
  const auto got = t.set->fetch(keys);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, keys[0]);
}

TEST(TierPromotion, AnEntryFoundInASlowerTierIsCopiedToTheFasterOnes) {
  TwoTiers t;
  Cache probe(1);
  const auto entries = entries_for(*probe.manager);
  t.fast->put(entries[0]);
  for (const auto& e : entries) t.slow->put(e);
  const auto keys = probe.manager->prompt_keys(prompt(), 0);
  ASSERT_EQ(t.set->fetch(keys).size(), 3u);
  t.set->flush();
  EXPECT_EQ(t.fast->size(), 3u) << "the two blocks read from the slow tier are now in the fast one";
  for (const auto& e : entries) EXPECT_TRUE(test::same_entry(*t.fast->get(e.key), e));
  const TierStats s = t.set->stats();
  EXPECT_EQ(s.copies_to_faster, 2u);
  EXPECT_EQ(s.tiers[0].writes, 2u);
  EXPECT_EQ(s.tiers[1].writes, 0u) << "a copy goes up only, never back to where it came from";
  // The next fetch is served by the fast tier alone.
  const int slow_gets = t.slow->gets();
  EXPECT_EQ(t.set->fetch(keys).size(), 3u);
  EXPECT_EQ(t.slow->gets(), slow_gets);
  EXPECT_EQ(t.set->stats().copies_to_faster, 2u);
}

TEST(TierPromotion, ComputedBlocksAreWrittenThrough) {
  auto mem = std::make_unique<MemoryTier>();
  MemoryTier* tier = mem.get();
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::move(mem));
  TierSet set(std::move(tiers), kFingerprint, test::small_tier_geometry(), 1 << 20);
  Cache c(8, &set);
  CachedSequence seq(4);
  const auto p = prompt();
  c.manager->begin(seq, p, 0);
  ASSERT_TRUE(c.manager->reserve(seq, static_cast<int>(p.size())));
  for (int32_t t : p) c.manager->append(seq, t);
  for (BlockId id : seq.table.blocks())
    std::memset(c.pool->block_data(id), 0x40 + id, c.pool->geometry().block_bytes());
  c.manager->commit(seq);
  set.flush();
  const auto keys = c.manager->prompt_keys(p, 0);
  ASSERT_EQ(tier->size(), 3u);
  for (std::size_t b = 0; b < 3; ++b) {
    auto e = tier->get(keys[b]);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->parent, b == 0 ? kNoKey : keys[b - 1]);
    EXPECT_EQ(e->positions[0], static_cast<int32_t>(4 * b));
    EXPECT_EQ(e->kv[0], static_cast<std::byte>(0x40 + seq.table.blocks()[b]));
    EXPECT_EQ(entry_defect(*e, kFingerprint, keys[b], test::small_tier_geometry()), nullptr);
  }
  EXPECT_EQ(set.stats().writes_queued, 3u);
  c.manager->release(seq);
}

}  // namespace
}  // namespace clm
