// A persistent tier after crashes and meddling: index rows without bytes,
// a damaged index, a writer killed with SIGKILL in the middle of its
// writes, concurrent writers and readers. Each test runs for both stores.
#include "tier/persistent_tier_fixture.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace clm::test {
namespace {

class TierRecovery : public PersistentTier {};

TEST_P(TierRecovery, IndexRowWithoutBytesIsDroppedWithDependents) {
  const std::vector<TierEntry> entries = chain(10, 3);
  const TierEntry other_root = make_tier_entry(kModel, 50, kNoKey);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
    ASSERT_TRUE(tier->put(other_root));
  }
  lose_bytes(11);
  auto tier = open();
  const std::vector<StoredEntry> rows = tier->store().list();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, 10u);
  EXPECT_EQ(rows[1].key, 50u);
  EXPECT_EQ(tier->exists(keys(entries)), 1u);
  if (disk()) {
    EXPECT_FALSE(fs::exists(file_of(12)));
  }
}

TEST_P(TierRecovery, BytesVanishingWhileOpenAreAMiss) {
  auto tier = open();
  const std::vector<TierEntry> entries = chain(10, 2);
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  lose_bytes(10);
  EXPECT_FALSE(tier->get(10).has_value());
  EXPECT_EQ(tier->exists(keys(entries)), 0u);
}

TEST_P(TierRecovery, DamagedIndexIsRebuiltOrStartedAfresh) {
  const std::vector<TierEntry> entries = chain(60, 3);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  }
  {
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(db_file() + suffix);
    // Everything after the database header is destroyed; the header, which
    // says whose database it is, is kept (a file that is not the store's is
    // refused instead: DiskTierFiles and SqliteOwnership).
    std::string header(100, '\0');
    std::ifstream(db_file(), std::ios::binary).read(header.data(), 100);
    std::ofstream out(db_file(), std::ios::binary | std::ios::trunc);
    out << header << std::string(4096, 'x');
  }
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  // The disk tier rebuilds its index from the files; the SQLite tier's
  // entries lived in the damaged database: it starts empty but works.
  EXPECT_EQ(tier->exists(keys(entries)), disk() ? 3u : 0u);
  if (disk()) {
    for (const TierEntry& e : entries) EXPECT_TRUE(same_entry(*tier->get(e.key), e));
  }
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 70, kNoKey)));
  EXPECT_TRUE(tier->get(70).has_value());
}

TEST_P(TierRecovery, WriterKilledMidStreamLeavesOnlyWholeEntries) {
  constexpr int kEntries = 400;
  int progress[2];
  ASSERT_EQ(::pipe(progress), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(progress[0]);
    auto store = open_entry_store(spec_, options_);
    if (!store) ::_exit(2);
    StoreTier tier(std::move(*store), kModel, small_tier_geometry());
    for (int i = 0; i < kEntries; ++i) {
      if (!tier.put(make_tier_entry(kModel, 1000 + i, i == 0 ? kNoKey : 1000 + i - 1))) ::_exit(3);
      const char tick = 1;
      if (::write(progress[1], &tick, 1) != 1) ::_exit(4);
    }
    ::_exit(0);
  }
  ::close(progress[1]);
  // Let some writes land, then kill the writer in the middle of the next ones.
  char tick = 0;
  int written = 0;
  while (written < 20 && ::read(progress[0], &tick, 1) == 1) ++written;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(progress[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it was killed";

  auto tier = open();
  int present = 0;
  for (int i = 0; i < kEntries; ++i) {
    const TierEntry expected = make_tier_entry(kModel, 1000 + i, i == 0 ? kNoKey : 1000 + i - 1);
    if (std::optional<TierEntry> back = tier->get(expected.key)) {
      EXPECT_TRUE(same_entry(*back, expected)) << i;
      ++present;
    }
  }
  EXPECT_GE(present, written);
  EXPECT_EQ(tier->store().counters().quarantined, 0u);
  if (disk()) {
    for (const fs::directory_entry& item : fs::directory_iterator(dir_ + "/cache"))
      EXPECT_NE(item.path().extension(), ".tmp") << "a dead writer's temporary file was left behind";
  }
}

TEST_P(TierRecovery, ConcurrentWritersAndReadersSeeWholeEntries) {
  // The cache manager's background writer and its admission reads share one
  // tier from different threads.
  auto tier = open();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 12;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const BlockKey key = 5000 + t * 100 + i;
        const TierEntry e = make_tier_entry(kModel, key, i == 0 ? kNoKey : key - 1);
        if (!tier->put(e)) ++bad;
        // Read back a neighbour's latest entry: absent or whole.
        const BlockKey other = 5000 + ((t + 1) % kThreads) * 100 + i;
        if (auto back = tier->get(other);
            back && !same_entry(*back, make_tier_entry(kModel, other, i == 0 ? kNoKey : other - 1)))
          ++bad;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(tier->store().list().size(), static_cast<std::size_t>(kThreads * kPerThread));
}

INSTANTIATE_TEST_SUITE_P(Stores, TierRecovery, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
