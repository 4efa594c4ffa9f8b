// The fixture of the persistent tier tests: a disk tier or an SQLite tier
// (the test parameter, "disk" or "sqlite") in a fresh temporary directory,
// with a clock the test moves, and the means to damage what is stored
// behind the store's back.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "support/test_paths.h"
#include "support/tier_entries.h"
#include "tier/disk_store.h"
#include "tier/open_cache_tier.h"
#include "tier/sqlite_db.h"
#include "tier/store_tier.h"

namespace clm::test {

namespace fs = std::filesystem;

inline constexpr uint64_t kModel = 0xA11CE;
inline constexpr uint64_t kOtherModel = 0xB0B;

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

inline std::string store_kind_name(const ::testing::TestParamInfo<std::string>& param) { return param.param; }

}  // namespace clm::test
