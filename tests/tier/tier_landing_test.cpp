// Promotion straight into pool blocks: a disk or SQLite tier reads an
// entry's K/V into a block reserved for it, the cache manager publishes that
// block in place, and a damaged entry leaves the pool as it was.
#include <cstring>

#include "cache/kv_cache_manager.h"
#include "tier/persistent_tier_fixture.h"
#include "tier/tier_set.h"

namespace clm::test {
namespace {

// Reserves blocks from the manager as the scheduler does between steps.
class PoolLanding final : public KvLandingSource {
 public:
  PoolLanding(KvCacheManager& manager, KvPool& pool) : manager_(manager), pool_(pool) {}
  ~PoolLanding() override {
    for (std::size_t i = next_; i < held_.size(); ++i) manager_.return_landing(held_[i]);
  }
  void reserve(std::size_t n) override {
    for (std::size_t i = held_.size() - next_; i < n; ++i) {
      const BlockId id = manager_.reserve_landing();
      if (id == kNoBlock) return;
      held_.push_back(id);
    }
  }
  std::optional<KvLanding> take() override {
    if (next_ == held_.size()) return std::nullopt;
    const BlockId id = held_[next_++];
    return KvLanding{id, std::span<std::byte>(pool_.block_data(id), pool_.geometry().block_bytes())};
  }
  void give_back(BlockId block) override { manager_.return_landing(block); }

 private:
  KvCacheManager& manager_;
  KvPool& pool_;
  std::vector<BlockId> held_;
  std::size_t next_ = 0;
};

class TierLanding : public PersistentTier {
 protected:
  void SetUp() override {
    PersistentTier::SetUp();
    pool_ = std::move(*KvPool::create(small_tier_geometry(), 8));
    manager_ = std::make_unique<KvCacheManager>(*pool_, kModel, CacheOptions{});
    prompt_.clear();
    entries_.clear();
    for (int i = 0; i < 14; ++i) prompt_.push_back(10 + i);
    keys_ = manager_->prompt_keys(prompt_, 0);
    for (std::size_t i = 0; i < keys_.size(); ++i)
      entries_.push_back(chain_entry(kModel, keys_[i], i == 0 ? kNoKey : keys_[i - 1], static_cast<int>(i)));
  }

  // A tier set over the store holding the prompt's three blocks, each
  // edited by `damage` (index, stored bytes) behind the store's back.
  std::unique_ptr<TierSet> stored(const std::function<void(std::size_t, std::vector<std::byte>&)>& damage = {}) {
    {
      auto tier = open();
      for (const TierEntry& e : entries_) EXPECT_TRUE(tier->put(e));
    }
    if (damage) {
      for (std::size_t i = 0; i < keys_.size(); ++i) {
        std::vector<std::byte> bytes = stored_bytes(keys_[i]);
        const std::vector<std::byte> before = bytes;
        damage(i, bytes);
        if (bytes != before) overwrite(keys_[i], bytes);
      }
    }
    std::vector<std::unique_ptr<CacheTier>> tiers;
    tiers.push_back(open());
    return std::make_unique<TierSet>(std::move(tiers), kModel, small_tier_geometry(), 1 << 20);
  }

  std::vector<LandedEntry> fetch(TierSet& set) {
    PoolLanding landing(*manager_, *pool_);
    return set.fetch(keys_, &landing);
  }

  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<KvCacheManager> manager_;
  std::vector<int32_t> prompt_;
  std::vector<BlockKey> keys_;
  std::vector<TierEntry> entries_;
};

TEST_P(TierLanding, EntriesLandInPoolBlocksBitwiseAndArePublishedInPlace) {
  auto set = stored();
  const std::vector<LandedEntry> got = fetch(*set);
  ASSERT_EQ(got.size(), 3u);
  std::vector<BlockId> landed;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NE(got[i].block, kNoBlock) << "read into a reserved pool block";
    EXPECT_TRUE(got[i].kv.empty()) << "no staging buffer";
    EXPECT_EQ(got[i].key, keys_[i]);
    EXPECT_EQ(got[i].tokens, entries_[i].tokens);
    EXPECT_EQ(std::memcmp(pool_->block_data(got[i].block), entries_[i].kv.data(), entries_[i].kv.size()), 0)
        << "block " << i << " holds the bytes that were written";
    landed.push_back(got[i].block);
  }
  EXPECT_EQ(pool_->n_free(), 5u);
  EXPECT_EQ(manager_->adopt(prompt_, 0, got), 3u);
  EXPECT_EQ(pool_->n_free(), 5u) << "adoption took no other block";
  CachedSequence seq(4);
  EXPECT_EQ(manager_->begin(seq, prompt_, 0), 12);
  EXPECT_EQ(std::vector<BlockId>(seq.table.blocks().begin(), seq.table.blocks().begin() + 3), landed)
      << "the prefix hit uses the blocks the entries landed in";
  manager_->release(seq);
}

TEST_P(TierLanding, ADamagedEntryLeavesThePoolAsItWasAndNothingAdopted) {
  const std::size_t kv_bytes = small_tier_geometry().block_bytes();
  struct Damage {
    const char* what;
    std::function<void(std::vector<std::byte>&)> apply;
  };
  const Damage damages[] = {
      {"a flipped bit in the K/V", [&](std::vector<std::byte>& b) { b[b.size() - kv_bytes / 3] ^= std::byte{0x10}; }},
      {"a flipped bit in the last byte", [](std::vector<std::byte>& b) { b.back() ^= std::byte{1}; }},
      {"truncated", [](std::vector<std::byte>& b) { b.resize(b.size() - 100); }},
  };
  for (const Damage& d : damages) {
    for (std::size_t bad : {std::size_t{0}, std::size_t{1}}) {
      SCOPED_TRACE(std::string(d.what) + ", block " + std::to_string(bad));
      SetUp();
      auto set = stored([&](std::size_t i, std::vector<std::byte>& bytes) {
        if (i == bad) d.apply(bytes);
      });
      const std::size_t free_before = pool_->n_free();
      const std::vector<LandedEntry> got = fetch(*set);
      ASSERT_EQ(got.size(), bad) << "the chain ends before the damaged entry";
      EXPECT_EQ(pool_->n_free(), free_before - bad) << "the damaged entry's block went back to the pool";
      EXPECT_EQ(manager_->adopt(prompt_, 0, got), bad);
      EXPECT_EQ(manager_->match_prefix(prompt_, 0), static_cast<int>(4 * bad));
      EXPECT_EQ(manager_->stats().blocks_cached, bad);
      EXPECT_EQ(pool_->n_free(), free_before - bad);
      EXPECT_TRUE(quarantined(keys_[bad]));
    }
  }
}

TEST_P(TierLanding, BlocksNotAdoptedGoBackToThePool) {
  auto set = stored();
  std::vector<LandedEntry> got = fetch(*set);
  ASSERT_EQ(got.size(), 3u);
  got[1].tokens[0] += 1;  // no longer this prompt's block (as after a hash collision)
  EXPECT_EQ(manager_->adopt(prompt_, 0, got), 1u);
  EXPECT_EQ(pool_->n_free(), 7u) << "the two landed blocks not adopted were freed";
}

INSTANTIATE_TEST_SUITE_P(Stores, TierLanding, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
