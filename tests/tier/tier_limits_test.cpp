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
      EXPECT_TRUE(item.path().filename() == "quarantine" || item.path().filename().string().starts_with("index.sqlite"))
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

INSTANTIATE_TEST_SUITE_P(Stores, TierLimits, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
