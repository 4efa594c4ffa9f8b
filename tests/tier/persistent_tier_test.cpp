// The disk tier and the SQLite tier against real files in a temporary
// directory, with real fsync: round trips, damage of every kind, a lost
// index, the free-space floor, the size cap, the time to live, dependents,
// and a writer killed with SIGKILL in the middle of its writes. Each test
// runs for both stores.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_paths.h"
#include "support/tier_entries.h"
#include "tier/disk_store.h"
#include "tier/entry_codec.h"
#include "tier/open_cache_tier.h"
#include "tier/sqlite_db.h"
#include "tier/store_tier.h"

namespace clm {
namespace {

namespace fs = std::filesystem;
using test::make_tier_entry;
using test::same_entry;
using test::small_tier_geometry;

constexpr uint64_t kModel = 0xA11CE;
constexpr uint64_t kOtherModel = 0xB0B;

// How a test reaches under a store to damage it, per kind of store.
class PersistentTier : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    spec_ = disk() ? dir_ + "/cache" : "sqlite:" + dir_ + "/cache.db";
    options_.min_free_bytes = 0;
    options_.clock_ms = [clock = clock_] { return *clock += 1; };
  }

  bool disk() const { return GetParam() == "disk"; }

  std::unique_ptr<StoreTier> open(uint64_t model = kModel) {
    auto store = open_entry_store(spec_, options_);
    EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
    if (!store) return nullptr;
    return std::make_unique<StoreTier>(std::move(*store), model, small_tier_geometry());
  }

  std::string file_of(BlockKey key) const { return dir_ + "/cache/" + DiskStore::file_name(key); }
  std::string db_file() const { return disk() ? dir_ + "/cache/index.sqlite" : dir_ + "/cache.db"; }

  std::vector<std::byte> stored_bytes(BlockKey key) {
    if (disk()) {
      std::ifstream in(file_of(key), std::ios::binary);
      std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                    reinterpret_cast<const std::byte*>(s.data()) + s.size());
    }
    auto db = SqliteDb::open(db_file());
    auto s = db->prepare("SELECT data FROM entries WHERE key = ?1");
    s->bind_key(1, key);
    EXPECT_TRUE(*s->step());
    return s->column_blob(0);
  }

  // Replaces the stored bytes of key, behind the store's back.
  void overwrite(BlockKey key, const std::vector<std::byte>& bytes) {
    if (disk()) {
      std::ofstream out(file_of(key), std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      return;
    }
    auto db = SqliteDb::open(db_file());
    auto s = db->prepare("UPDATE entries SET data = ?2 WHERE key = ?1");
    ASSERT_TRUE(s->bind_key(1, key).bind(2, std::span<const std::byte>(bytes)).run());
  }

  // Removes the bytes of key but keeps its index row.
  void lose_bytes(BlockKey key) {
    if (disk()) {
      ASSERT_TRUE(fs::remove(file_of(key)));
      return;
    }
    auto db = SqliteDb::open(db_file());
    ASSERT_TRUE(db->exec("UPDATE entries SET data = NULL WHERE key = " + std::to_string(key)));
  }

  bool quarantined(BlockKey key) {
    if (disk()) return fs::exists(dir_ + "/cache/quarantine/" + DiskStore::file_name(key));
    auto db = SqliteDb::open(db_file());
    auto s = db->prepare("SELECT COUNT(*) FROM quarantine WHERE key = ?1");
    s->bind_key(1, key);
    return *s->step() && s->column_int(0) == 1;
  }

  // A chain of n blocks with keys first, first+1, ...
  std::vector<TierEntry> chain(BlockKey first, int n, uint64_t model = kModel) {
    std::vector<TierEntry> out;
    for (int i = 0; i < n; ++i) out.push_back(make_tier_entry(model, first + i, i == 0 ? kNoKey : first + i - 1));
    return out;
  }

  static std::vector<BlockKey> keys(const std::vector<TierEntry>& entries) {
    std::vector<BlockKey> out;
    for (const TierEntry& e : entries) out.push_back(e.key);
    return out;
  }

  std::string dir_;
  std::string spec_;
  DiskTierOptions options_;
  std::shared_ptr<int64_t> clock_ = std::make_shared<int64_t>(1'700'000'000'000);
};

TEST_P(PersistentTier, RoundTripIsBitwiseAcrossReopen) {
  const std::vector<TierEntry> entries = chain(100, 4);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
    EXPECT_EQ(tier->exists(keys(entries)), 4u);
  }
  auto tier = open();
  EXPECT_EQ(tier->name(), GetParam());
  EXPECT_EQ(tier->exists(keys(entries)), 4u);
  for (const TierEntry& e : entries) {
    std::optional<TierEntry> back = tier->get(e.key);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(same_entry(*back, e));
  }
  EXPECT_FALSE(tier->get(999).has_value());
  EXPECT_EQ(tier->counters().hits, 4u);
  EXPECT_EQ(tier->counters().misses, 1u);
}

TEST_P(PersistentTier, EntryIsAStandardSafetensorsFile) {
  const TierEntry e = make_tier_entry(kModel, 42, 7);
  open()->store().write(e);
  const std::vector<std::byte> bytes = stored_bytes(42);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const auto header = nlohmann::json::parse(text, text + length);
  const KvGeometry g = small_tier_geometry();
  const std::size_t half = g.block_bytes() / 2;
  EXPECT_EQ(header["k"]["dtype"], "F16");
  EXPECT_EQ(header["k"]["shape"], nlohmann::json({g.n_layers, g.n_kv_heads, g.block_size, g.head_dim}));
  EXPECT_EQ(header["v"]["data_offsets"], nlohmann::json({half, 2 * half}));
  EXPECT_EQ(header["__metadata__"]["key"], "000000000000002a");
  EXPECT_EQ(header["__metadata__"]["parent"], "0000000000000007");
  EXPECT_EQ(bytes.size(), 8 + length + g.block_bytes());
  // Layer 1's V, as the pool lays it out, is the second half of tensor v.
  const std::byte* v = bytes.data() + 8 + length + half;
  const std::size_t part = g.layer_bytes() / 2;
  EXPECT_TRUE(std::equal(v + part, v + 2 * part, e.kv.begin() + static_cast<std::ptrdiff_t>(g.layer_bytes() + part)));
}

TEST_P(PersistentTier, DamagedEntriesAreQuarantinedMissesWithTheirDependents) {
  struct Damage {
    const char* what;
    std::vector<std::byte> (*apply)(std::vector<std::byte>);
  };
  const Damage damages[] = {
      {"zero bytes", [](std::vector<std::byte>) { return std::vector<std::byte>(); }},
      {"truncated",
       [](std::vector<std::byte> b) {
         b.resize(b.size() - 100);
         return b;
       }},
      {"a flipped bit in K/V",
       [](std::vector<std::byte> b) {
         b[b.size() - 10] ^= std::byte{0x10};
         return b;
       }},
      {"a flipped bit in the header",
       [](std::vector<std::byte> b) {
         b[12] ^= std::byte{0x01};
         return b;
       }},
  };
  BlockKey first = 1000;
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    const std::vector<TierEntry> entries = chain(first, 3);
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
    overwrite(first + 1, damage.apply(stored_bytes(first + 1)));
    EXPECT_FALSE(tier->get(first + 1).has_value());
    EXPECT_TRUE(quarantined(first + 1));
    // The damaged block's child went with it; its parent stays.
    EXPECT_EQ(tier->exists(keys(entries)), 1u);
    EXPECT_FALSE(tier->get(first + 2).has_value());
    EXPECT_TRUE(tier->get(first).has_value());
    EXPECT_EQ(tier->store().counters().quarantined, 1u);
    if (disk()) {
      EXPECT_FALSE(fs::exists(file_of(first + 2)));
    }
    first += 10;
  }
}

TEST_P(PersistentTier, AnotherModelsEntriesAreMissesAndStayTheirs) {
  const TierEntry mine = make_tier_entry(kModel, 5, kNoKey);
  const TierEntry theirs = make_tier_entry(kOtherModel, 6, kNoKey);
  ASSERT_TRUE(open(kOtherModel)->put(theirs));
  auto tier = open();
  ASSERT_TRUE(tier->put(mine));
  const BlockKey their_key[] = {6};
  EXPECT_EQ(tier->exists(their_key), 0u);
  EXPECT_FALSE(tier->get(6).has_value());
  EXPECT_FALSE(quarantined(6));
  EXPECT_TRUE(open(kOtherModel)->get(6).has_value());
  // A tier refuses to store another model's entry.
  EXPECT_FALSE(tier->put(make_tier_entry(kOtherModel, 8, kNoKey)));

  // Another model's bytes planted under one of this model's keys: damage.
  overwrite(5, stored_bytes(6));
  EXPECT_FALSE(tier->get(5).has_value());
  EXPECT_TRUE(quarantined(5));
}

TEST_P(PersistentTier, AnotherKvGeometryIsAMissNotDamage) {
  ASSERT_TRUE(open()->put(make_tier_entry(kModel, 5, kNoKey)));
  auto store = open_entry_store(spec_, options_);
  KvGeometry f32 = small_tier_geometry();
  f32.type = KvType::F32;
  StoreTier other(std::move(*store), kModel, f32);
  EXPECT_FALSE(other.get(5).has_value());
  EXPECT_FALSE(quarantined(5));
}

TEST_P(PersistentTier, IndexRowWithoutBytesIsDroppedWithDependents) {
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

TEST_P(PersistentTier, BytesVanishingWhileOpenAreAMiss) {
  auto tier = open();
  const std::vector<TierEntry> entries = chain(10, 2);
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  lose_bytes(10);
  EXPECT_FALSE(tier->get(10).has_value());
  EXPECT_EQ(tier->exists(keys(entries)), 0u);
}

TEST_P(PersistentTier, DependentsGoWithTheirParent) {
  const std::vector<TierEntry> entries = chain(20, 4);
  const TierEntry sibling = make_tier_entry(kModel, 30, 21);  // a second child of 21
  const TierEntry unrelated = make_tier_entry(kModel, 40, kNoKey);
  auto tier = open();
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  ASSERT_TRUE(tier->put(sibling));
  ASSERT_TRUE(tier->put(unrelated));
  tier->remove(21);
  EXPECT_EQ(tier->exists(keys(entries)), 1u);
  for (BlockKey gone : {21, 22, 23, 30}) {
    EXPECT_FALSE(tier->get(gone).has_value()) << gone;
    if (disk()) {
      EXPECT_FALSE(fs::exists(file_of(gone))) << gone;
    }
  }
  EXPECT_TRUE(tier->get(40).has_value());
  EXPECT_EQ(tier->store().list().size(), 2u);
  EXPECT_EQ(tier->store().counters().dependents_removed, 3u);
}

TEST_P(PersistentTier, FreeSpaceFloorRefusesBeforeWriting) {
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

TEST_P(PersistentTier, SizeCapEvictsLeastRecentlyUsed) {
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

TEST_P(PersistentTier, ExpiredEntriesAreAbsentAndCollected) {
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

TEST_P(PersistentTier, DamagedIndexIsRebuiltOrStartedAfresh) {
  const std::vector<TierEntry> entries = chain(60, 3);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  }
  {
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(db_file() + suffix);
    std::ofstream out(db_file(), std::ios::binary | std::ios::trunc);
    out << std::string(4096, 'x');
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

TEST_P(PersistentTier, WriterKilledMidStreamLeavesOnlyWholeEntries) {
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

TEST_P(PersistentTier, ConcurrentWritersAndReadersSeeWholeEntries) {
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

INSTANTIATE_TEST_SUITE_P(Stores, PersistentTier, ::testing::Values("disk", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

// What only a directory of files can suffer.
class DiskTierFiles : public PersistentTier {};

TEST_P(DiskTierFiles, FileWithoutRowIsVerifiedAndIndexedAtOpen) {
  const std::vector<TierEntry> entries = chain(80, 3);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  }
  {
    auto db = SqliteDb::open(db_file());
    ASSERT_TRUE(db->exec("DELETE FROM entries WHERE key IN (81, 82)"));
  }
  // A damaged file without a row: quarantined at open, never indexed.
  std::vector<std::byte> bad = stored_bytes(80);
  bad.resize(bad.size() / 2);
  const BlockKey bad_key = 90;
  {
    std::ofstream out(file_of(bad_key), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bad.data()), static_cast<std::streamsize>(bad.size()));
  }
  auto tier = open();
  EXPECT_EQ(tier->exists(keys(entries)), 3u);
  for (const TierEntry& e : entries) EXPECT_TRUE(same_entry(*tier->get(e.key), e));
  EXPECT_TRUE(quarantined(bad_key));
  EXPECT_EQ(tier->store().list().size(), 3u);
}

TEST_P(DiskTierFiles, LeftoverTemporaryFilesOfDeadWritersAreDeleted) {
  open();
  // A pid that cannot be alive (above the kernel's limit) and our parent's,
  // which is.
  const std::string dead = dir_ + "/cache/0000000000000001.4194305.0.tmp";
  const std::string live = dir_ + "/cache/0000000000000001." + std::to_string(::getppid()) + ".0.tmp";
  std::ofstream(dead) << "partial";
  std::ofstream(live) << "partial";
  open();
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
}

TEST_P(DiskTierFiles, DirectoryIsPrivate) {
  open();
  const fs::perms perms = fs::status(dir_ + "/cache").permissions();
  EXPECT_EQ(perms & fs::perms::all, fs::perms::owner_all);
}

INSTANTIATE_TEST_SUITE_P(Disk, DiskTierFiles, ::testing::Values("disk"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace clm
