// SessionArchive on real files: sessions come back after the archive is
// reopened, expired ones are dropped, damaged rows are skipped with one log
// line each and deleted, and a database too damaged to open is set aside.
#include "tier/session_archive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/test_paths.h"
#include "tier/sqlite_db.h"

namespace clm {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;  // ms since the epoch

SessionRecord record(const std::string& id, int64_t last_used_ms, std::vector<int32_t> tokens = {1, 2, 3}) {
  return {id, "text of " + id, std::move(tokens), last_used_ms};
}

std::unique_ptr<SessionArchive> open_archive(const std::string& path) {
  auto archive = SessionArchive::open(path);
  EXPECT_TRUE(archive) << archive.error().message;
  return archive ? std::move(*archive) : nullptr;
}

int64_t row_count(const std::string& path) {
  auto db = SqliteDb::open(path);
  EXPECT_TRUE(db);
  auto s = db->prepare("SELECT COUNT(*) FROM sessions");
  EXPECT_TRUE(s);
  EXPECT_TRUE(s->step().value_or(false));
  return s->column_int(0);
}

void run_sql(const std::string& path, const std::string& sql) {
  auto db = SqliteDb::open(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec(sql)) << sql;
}

TEST(SessionArchive, SessionsComeBackAfterReopening) {
  const std::string path = test::temp_dir() + "/sessions.sqlite";
  {
    auto archive = open_archive(path);
    ASSERT_TRUE(archive);
    archive->save(record("first", kNow - 5000));
    archive->save(record("gone", kNow - 4000));
    archive->save(record("second", kNow - 3000, {7, 8}));
    archive->save(record("second", kNow - 1000, {7, 8, 9, 10}));  // its next turn replaces it
    archive->remove("gone");
  }  // the destructor writes what is queued
  auto archive = open_archive(path);
  ASSERT_TRUE(archive);
  const std::vector<SessionRecord> got = archive->load(60, kNow);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, "first");  // oldest first
  EXPECT_EQ(got[0].text, "text of first");
  EXPECT_EQ(got[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(got[0].last_used_unix_ms, kNow - 5000);
  EXPECT_EQ(got[1].id, "second");
  EXPECT_EQ(got[1].tokens, (std::vector<int32_t>{7, 8, 9, 10}));
  EXPECT_EQ(archive->write_failures(), 0u);
}

TEST(SessionArchive, ExpiredSessionsAreDroppedAndDeleted) {
  const std::string path = test::temp_dir() + "/sessions.sqlite";
  auto archive = open_archive(path);
  ASSERT_TRUE(archive);
  archive->save(record("old", kNow - 120'000));
  archive->save(record("recent", kNow - 30'000));
  archive->flush();
  const auto got = archive->load(60, kNow);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "recent");
  EXPECT_EQ(row_count(path), 1);
}

TEST(SessionArchive, DamagedRowsAreSkippedWithOneLineEach) {
  const std::string path = test::temp_dir() + "/sessions.sqlite";
  {
    auto archive = open_archive(path);
    ASSERT_TRUE(archive);
    for (const char* id : {"intact", "flipped", "torn", "retimed"}) archive->save(record(id, kNow - 1000));
  }
  run_sql(path, "UPDATE sessions SET text = 'text of flipped!' WHERE id = 'flipped'");
  run_sql(path, "UPDATE sessions SET tokens = X'0102030405' WHERE id = 'torn'");
  run_sql(path, "UPDATE sessions SET last_used_ms = last_used_ms + 1 WHERE id = 'retimed'");
  auto archive = open_archive(path);
  ASSERT_TRUE(archive);
  testing::internal::CaptureStderr();
  const auto got = archive->load(60, kNow);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "intact");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 3) << log;
  EXPECT_NE(log.find("checksum"), std::string::npos) << log;
  EXPECT_NE(log.find("not whole ids"), std::string::npos) << log;
  EXPECT_EQ(row_count(path), 1);
}

TEST(SessionArchive, AnUnreadableDatabaseIsSetAsideAndANewOneBegun) {
  const std::string dir = test::temp_dir();
  const std::string path = dir + "/sessions.sqlite";
  {
    std::ofstream garbage(path, std::ios::binary);
    garbage << std::string(8192, 'x');
  }
  testing::internal::CaptureStderr();
  auto archive = open_archive(path);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(archive);
  EXPECT_NE(log.find("set aside"), std::string::npos) << log;
  EXPECT_TRUE(archive->load(60, kNow).empty());
  archive->save(record("new", kNow));
  archive->flush();
  EXPECT_EQ(row_count(path), 1);
  int aside = 0;
  for (const auto& item : std::filesystem::directory_iterator(dir))
    aside += item.path().filename().string().starts_with("sessions.sqlite.damaged-");
  EXPECT_EQ(aside, 1);
}

TEST(SessionArchive, LivesBesideTheDiskCache) {
  EXPECT_EQ(SessionArchive::path_for("cache/kv"), "cache/kv/sessions.sqlite");
  EXPECT_EQ(SessionArchive::path_for("sqlite:data/kv.db"), "data/kv.db.sessions");
}

TEST(SessionArchive, TheChecksumCoversEveryField) {
  const SessionRecord r = record("a", kNow);
  const uint64_t sum = session_record_checksum(r);
  for (int field = 0; field < 4; ++field) {
    SessionRecord changed = r;
    if (field == 0) changed.id += "x";
    if (field == 1) changed.text += "x";
    if (field == 2) changed.tokens.back() ^= 1;
    if (field == 3) ++changed.last_used_unix_ms;
    EXPECT_NE(session_record_checksum(changed), sum) << field;
  }
}

}  // namespace
}  // namespace clm
