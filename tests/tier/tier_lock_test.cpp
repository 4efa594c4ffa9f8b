// A store whose database another process holds locked costs a request a
// miss or a skipped hit count, not the seconds of SQLite's busy wait: the
// lookups a request waits for give up on the lock at once.
#include "tier/persistent_tier_fixture.h"

#include <chrono>

namespace clm::test {
namespace {

class TierLock : public PersistentTier {};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_P(TierLock, ALockedDatabaseDoesNotHoldUpLookups) {
  auto tier = open();
  const std::vector<TierEntry> entries = chain(40, 3);
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  ASSERT_TRUE(tier->get(entries[0].key).has_value());  // a hit count waits to be written
  // Another connection (another process, as far as SQLite's locks go)
  // takes the write lock and keeps it.
  auto other = SqliteDb::open(db_file());
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_TRUE(other->exec("BEGIN IMMEDIATE"));
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t present = tier->exists(keys(entries));
  const auto got = tier->get(entries[1].key);
  const uint64_t bytes = tier->store().stored_bytes();
  // Without the short wait each call that writes would wait 5 s.
  EXPECT_LT(seconds_since(t0), 1.0);
  // Readers are not blocked by a writer's lock (WAL): the lookups still hit.
  EXPECT_EQ(present, 3u);
  EXPECT_TRUE(got.has_value());
  EXPECT_GT(bytes, 0u);
  ASSERT_TRUE(other->exec("COMMIT"));
  // Once the lock is gone, the hits held back are written.
  EXPECT_EQ(tier->exists(keys(entries)), 3u);
}

INSTANTIATE_TEST_SUITE_P(Stores, TierLock, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
