// The persistent stores touch only what is theirs: a path is adopted only if
// it is new, empty or marked as a store of clmcache's; anything else is
// refused with a message and left byte for byte as it was (never renamed,
// never written). Quarantine stays inside the store and is bounded, and an
// existing directory keeps its mode.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/test_paths.h"
#include "support/tier_entries.h"
#include "tier/disk_store.h"
#include "tier/open_cache_tier.h"
#include "tier/quarantine_dir.h"
#include "tier/sqlite_db.h"
#include "tier/store_tier.h"

namespace clm {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

DiskTierOptions options() {
  DiskTierOptions o;
  o.min_free_bytes = 0;
  return o;
}

// What lies in dir, names only: nothing may appear beside a refused path.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(dir)) names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Opening `spec` fails with a message holding `says`, and `dir` is as before.
void expect_refused_untouched(const std::string& spec, const std::string& dir, const std::string& says) {
  const auto before = listing(dir);
  auto store = open_entry_store(spec, options());
  ASSERT_FALSE(store) << spec;
  EXPECT_NE(store.error().message.find(says), std::string::npos) << store.error().message;
  EXPECT_EQ(listing(dir), before) << "something was renamed or created beside " << spec;
}

TEST(SqliteOwnership, ATextFileIsRefusedAndLeftAsItIs) {
  const std::string dir = test::temp_dir();
  const std::string file = dir + "/notes.txt";
  write_all(file, "my notes, not a cache\n");
  expect_refused_untouched("sqlite:" + file, dir, "is not an SQLite database");
  EXPECT_EQ(read_all(file), "my notes, not a cache\n");
}

TEST(SqliteOwnership, AHugeSparseFileIsRefusedWithoutReadingIt) {
  const std::string dir = test::temp_dir();
  const std::string file = dir + "/sparse";
  write_all(file, "");
  ASSERT_EQ(::truncate(file.c_str(), off_t{2} << 30), 0);
  expect_refused_untouched("sqlite:" + file, dir, "is not an SQLite database");
  EXPECT_EQ(fs::file_size(file), uintmax_t{2} << 30);
}

TEST(SqliteOwnership, ADirectoryAFifoAndALinkAreRefused) {
  const std::string dir = test::temp_dir();
  fs::create_directory(dir + "/a-dir");
  write_all(dir + "/a-dir/keep", "x");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  write_all(dir + "/target", "target bytes");
  fs::create_symlink(dir + "/target", dir + "/link");
  expect_refused_untouched("sqlite:" + dir + "/a-dir", dir, "is not a regular file");
  expect_refused_untouched("sqlite:" + dir + "/fifo", dir, "is not a regular file");
  expect_refused_untouched("sqlite:" + dir + "/link", dir, "is a symbolic link");
  EXPECT_EQ(read_all(dir + "/a-dir/keep"), "x");
  EXPECT_EQ(read_all(dir + "/target"), "target bytes");
}

TEST(SqliteOwnership, AnotherProgramsDatabaseIsRefusedUnchanged) {
  const std::string dir = test::temp_dir();
  const std::string file = dir + "/app.db";
  {
    auto db = SqliteDb::open(file);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->exec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')"));
  }
  fs::remove(file + "-wal");
  fs::remove(file + "-shm");
  const std::string bytes = read_all(file);
  expect_refused_untouched("sqlite:" + file, dir, "another program (table users)");
  EXPECT_EQ(read_all(file), bytes);
  {
    auto db = SqliteDb::open(file);
    ASSERT_TRUE(db->exec("PRAGMA application_id = 42"));
  }
  fs::remove(file + "-wal");
  fs::remove(file + "-shm");
  const std::string marked = read_all(file);
  expect_refused_untouched("sqlite:" + file, dir, "application_id 0x0000002a");
  EXPECT_EQ(read_all(file), marked);
}

TEST(SqliteOwnership, ItsOwnDatabaseIsMarkedAndReopened) {
  const std::string dir = test::temp_dir();
  const std::string file = dir + "/cache.db";
  const TierEntry e = test::make_tier_entry(7, 5, kNoKey);
  {
    auto store = open_entry_store("sqlite:" + file, options());
    ASSERT_TRUE(store) << store.error().message;
    StoreTier tier(std::move(*store), 7, test::small_tier_geometry());
    ASSERT_TRUE(tier.put(e));
  }
  const std::string header = read_all(file).substr(68, 4);
  EXPECT_EQ(header, "clmc") << "the application_id marks it";
  auto store = open_entry_store("sqlite:" + file, options());
  ASSERT_TRUE(store) << store.error().message;
  StoreTier tier(std::move(*store), 7, test::small_tier_geometry());
  EXPECT_TRUE(tier.get(e.key).has_value());
}

TEST(DiskOwnership, AFullDirectoryThatIsNoCacheIsRefusedUntouched) {
  const std::string dir = test::temp_dir();
  const std::string home = dir + "/home";
  fs::create_directory(home);
  write_all(home + "/thesis.tex", "chapter one");
  ::chmod(home.c_str(), 0755);
  expect_refused_untouched(home, home, "is not a clmcache disk cache");
  EXPECT_EQ(read_all(home + "/thesis.tex"), "chapter one");
  struct stat st {};
  ASSERT_EQ(::stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST(DiskOwnership, AnExistingDirectoryKeepsItsModeAndANewOneIsPrivate) {
  const std::string dir = test::temp_dir();
  const std::string shared = dir + "/shared";
  fs::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  ASSERT_TRUE(open_entry_store(shared, options()));
  struct stat st {};
  ASSERT_EQ(::stat(shared.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  const std::string fresh = dir + "/a/b/fresh";
  ASSERT_TRUE(open_entry_store(fresh, options()));
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Marked: reopened though it is no longer empty.
  EXPECT_TRUE(fs::exists(fresh + "/.clmcache-disk-cache"));
  EXPECT_TRUE(open_entry_store(fresh, options()));
}

TEST(DiskOwnership, LinksPlantedInTheStoreAreNeverFollowed) {
  const std::string dir = test::temp_dir();
  const std::string cache = dir + "/cache";
  ASSERT_TRUE(open_entry_store(cache, options()));
  // Someone replaces quarantine/ with a link to a directory outside, and
  // index.sqlite with a link to another program's database.
  const std::string outside = dir + "/outside";
  fs::create_directory(outside);
  fs::remove_all(cache + "/quarantine");
  fs::create_directory_symlink(outside, cache + "/quarantine");
  const std::string other_db = dir + "/other.db";
  {
    auto db = SqliteDb::open(other_db);
    ASSERT_TRUE(db->exec("CREATE TABLE users (name TEXT)"));
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(cache + "/index.sqlite" + suffix);
  fs::create_symlink(other_db, cache + "/index.sqlite");
  // A damaged entry file for the store to find and set aside.
  write_all(cache + "/" + DiskStore::file_name(0x1234), "not an entry");
  auto store = open_entry_store(cache, options());
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(listing(outside).empty()) << "a file was moved out of the store";
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(cache + "/quarantine")));
  EXPECT_TRUE(fs::exists(cache + "/quarantine/" + DiskStore::file_name(0x1234)));
  auto other = SqliteDb::open(other_db);
  auto tables = other->prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'entries'");
  ASSERT_TRUE(tables && *tables->step());
  EXPECT_EQ(tables->column_int(0), 0) << "the linked database got the store's table";
  EXPECT_EQ((*store)->quarantine_size(), 1u);
}

TEST(Quarantine, IsBoundedByCountAndBytesOldestFirst) {
  const std::string dir = test::temp_dir();
  auto q = QuarantineDir::open(dir, {.max_files = 3, .max_bytes = 1000});
  ASSERT_TRUE(q) << q.error().message;
  for (char c = '0'; c < '5'; ++c) {
    const std::string name = std::string("f") + c;
    write_all(dir + "/" + name, std::string(100, 'x'));
    ASSERT_TRUE((*q)->admit(name, name));
  }
  EXPECT_EQ((*q)->count(), 3u);
  EXPECT_EQ(listing(dir + "/quarantine"), (std::vector<std::string>{"f2", "f3", "f4"}));
  write_all(dir + "/big", std::string(900, 'x'));
  ASSERT_TRUE((*q)->admit("big", "big"));
  EXPECT_LE((*q)->bytes(), 1000u);
  EXPECT_EQ(listing(dir + "/quarantine"), (std::vector<std::string>{"big", "f4"}));
  // Reopened, it counts what is there.
  q->reset();
  auto again = QuarantineDir::open(dir, {.max_files = 3, .max_bytes = 1000});
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->count(), 2u);
  EXPECT_EQ((*again)->bytes(), 1000u);
}

}  // namespace
}  // namespace clm
