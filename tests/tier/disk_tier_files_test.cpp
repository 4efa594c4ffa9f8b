// What only the disk tier's directory of files can suffer: files without
// index rows, leftover temporary files, the directory's permissions.
#include "tier/persistent_tier_fixture.h"

#include <unistd.h>

namespace clm::test {
namespace {

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

INSTANTIATE_TEST_SUITE_P(Stores, DiskTierFiles, ::testing::Values("disk"), store_kind_name);

}  // namespace
}  // namespace clm::test
