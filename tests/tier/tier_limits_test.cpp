// What a persistent tier refuses or drops: writes below the free-space
// floor, entries over the size cap (least recently used evicted first),
// expired entries. Each test runs for both stores.
#include "tier/persistent_tier_fixture.h"

#include "tier/entry_codec.h"

namespace clm::test {
namespace {

class TierLimits : public PersistentTier {};

TEST_P(TierLimits, FreeSpaceFloorRefusesBeforeWriting) {
  options_.min_free_bytes = uint64_t{1} << 62;  // more than any disk here has
  auto tier = open();
  EXPECT_FALSE(tier->put(make_tier_entry(kModel, 5, kNoKey)));
  EXPECT_EQ(tier->store().counters().writes_refused_space, 1u);
  EXPECT_EQ(tier->store().counters().writes, 0u);
  EXPECT_TRUE(tier->store().list().empty());
  if (disk()) {
    for (const fs::directory_entry& item : fs::directory_iterator(dir_ + "/cache"))
      EXPECT_TRUE(item.path().filename() == "quarantine" || item.path().filename() == ".clmcache-disk-cache" ||
                  item.path().filename().string().starts_with("index.sqlite"))
          << item.path();
  }
}

TEST_P(TierLimits, SizeCapEvictsLeastRecentlyUsed) {
  const std::size_t entry_size = encode_entry(make_tier_entry(kModel, 1, kNoKey)).size();
  options_.max_bytes = 3 * entry_size + entry_size / 2;
  auto tier = open();
  for (BlockKey key : {1, 2, 3}) ASSERT_TRUE(tier->put(make_tier_entry(kModel, key, kNoKey)));
  ASSERT_TRUE(tier->get(1).has_value());  // 2 is now the least recently used
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 4, kNoKey)));
  EXPECT_FALSE(tier->get(2).has_value());
  for (BlockKey key : {1, 3, 4}) EXPECT_TRUE(tier->get(key).has_value()) << key;
  EXPECT_EQ(tier->store().counters().evicted, 1u);
  if (disk()) {
    EXPECT_FALSE(fs::exists(file_of(2)));
  }

  options_.max_bytes = entry_size - 1;
  auto small = open();
  EXPECT_FALSE(small->put(make_tier_entry(kModel, 9, kNoKey)));
  EXPECT_EQ(small->store().counters().writes_refused_cap, 1u);
}

TEST_P(TierLimits, ExpiredEntriesAreAbsentAndCollected) {
  options_.ttl_s = 60;
  auto tier = open();
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 1, kNoKey)));
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 2, 1)));
  *clock_ += 30'000;
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 3, kNoKey)));
  *clock_ += 31'000;  // 1 and its child 2 are 61 s old, 3 is 31 s old
  const BlockKey chain_keys[] = {1, 2};
  EXPECT_EQ(tier->exists(chain_keys), 0u);
  EXPECT_FALSE(tier->get(1).has_value());
  EXPECT_EQ(tier->store().gc(), 2u);
  ASSERT_EQ(tier->store().list().size(), 1u);
  EXPECT_TRUE(tier->get(3).has_value());
}

TEST_P(TierLimits, SizeCapEvictingAParentTakesItsDependents) {
  // Sizes differ a little from key to key (the metadata holds them).
  const auto size_of = [](BlockKey key, BlockKey parent) { return encode_entry(make_tier_entry(kModel, key, parent)).size(); };
  const std::size_t three = size_of(1, kNoKey) + size_of(2, 1) + size_of(3, kNoKey);
  options_.max_bytes = three + size_of(4, kNoKey) / 2;
  auto tier = open();
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 1, kNoKey)));
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 2, 1)));
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 3, kNoKey)));
  ASSERT_TRUE(tier->get(2).has_value());  // the child is read, its parent is not:
  ASSERT_TRUE(tier->get(3).has_value());  // 1 is the least recently used
  EXPECT_EQ(tier->store().stored_bytes(), three);
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 4, kNoKey)));
  // Evicting 1 took 2, although 2 was read recently: a child without its
  // parent is never reachable.
  EXPECT_FALSE(tier->get(1).has_value());
  EXPECT_FALSE(tier->get(2).has_value());
  for (BlockKey key : {3, 4}) EXPECT_TRUE(tier->get(key).has_value()) << key;
  EXPECT_EQ(tier->store().list().size(), 2u);
  EXPECT_EQ(tier->store().counters().evicted, 1u);
  EXPECT_EQ(tier->store().counters().dependents_removed, 1u);
  EXPECT_EQ(tier->stored_bytes(), size_of(3, kNoKey) + size_of(4, kNoKey));
  if (disk()) {
    EXPECT_FALSE(fs::exists(file_of(2)));
  }
}

TEST_P(TierLimits, AnExpiredParentTakesItsRecentlyReadChildren) {
  options_.ttl_s = 60;
  auto tier = open();
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 1, kNoKey)));
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 2, 1)));
  *clock_ += 50'000;
  ASSERT_TRUE(tier->get(2).has_value());  // renews 2's time to live, not 1's
  *clock_ += 20'000;                      // 1 is 70 s unread, 2 is 20 s
  const BlockKey chain_keys[] = {1, 2};
  EXPECT_EQ(tier->exists(chain_keys), 0u);
  EXPECT_EQ(tier->store().gc(), 2u);
  EXPECT_TRUE(tier->store().list().empty());
  EXPECT_EQ(tier->store().counters().dependents_removed, 1u);
}

TEST_P(TierLimits, AReadRenewsTheTimeToLive) {
  options_.ttl_s = 60;
  auto tier = open();
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 1, kNoKey)));
  for (int i = 0; i < 3; ++i) {
    *clock_ += 40'000;
    ASSERT_TRUE(tier->get(1).has_value()) << "read every 40 s, so never 60 s unread";
  }
  EXPECT_EQ(tier->store().gc(), 0u);
  *clock_ += 61'000;
  EXPECT_FALSE(tier->get(1).has_value());
}

INSTANTIATE_TEST_SUITE_P(Stores, TierLimits, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
