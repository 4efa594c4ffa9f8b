// `clmcache cache ls|stats|verify|gc|clear` over a real disk cache directory
// and a real SQLite cache file, written by the tier the server uses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"
#include "support/tier_entries.h"
#include "tier/disk_store.h"
#include "tier/open_cache_tier.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

constexpr uint64_t kModel = 0xC0FFEE;

class CacheCommand : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    spec_ = GetParam() == "disk" ? dir_ + "/cache" : "sqlite:" + dir_ + "/cache.db";
    DiskTierOptions options;
    options.min_free_bytes = 0;
    auto tier = open_cache_tier(spec_, kModel, test::small_tier_geometry(), options);
    ASSERT_TRUE(tier.has_value()) << tier.error().message;
    // Two chains: 1 <- 2 <- 3, and 10.
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 1, kNoKey)));
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 2, 1)));
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 3, 2)));
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 10, kNoKey)));
  }

  test::CommandResult cache(const std::string& args) {
    return run_command(shell_quote(test::cli_binary()) + " cache " + args);
  }

  nlohmann::json json_of(const std::string& args) {
    const auto r = cache(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  std::string dir_;
  std::string spec_;
};

TEST_P(CacheCommand, ListsAndCountsEntries) {
  const nlohmann::json all = json_of("ls --json " + shell_quote(spec_));
  ASSERT_TRUE(all.is_array());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[1]["key"], "0000000000000002");
  EXPECT_EQ(all[1]["parent"], "0000000000000001");
  EXPECT_EQ(all[1]["fingerprint"], "0000000000c0ffee");
  const nlohmann::json subtree = json_of("ls --json --prefix 2 " + shell_quote(spec_));
  ASSERT_EQ(subtree.size(), 2u);
  EXPECT_EQ(subtree[0]["key"], "0000000000000002");
  EXPECT_EQ(subtree[1]["key"], "0000000000000003");

  const nlohmann::json stats = json_of("stats --json " + shell_quote(spec_));
  EXPECT_EQ(stats["store"], GetParam());
  EXPECT_EQ(stats["entries"], 4);
  EXPECT_EQ(stats["chains"], 2);
  EXPECT_EQ(stats["models"]["0000000000c0ffee"], 4);
  EXPECT_EQ(stats["quarantined"], 0);
  uint64_t bytes = 0;
  for (const nlohmann::json& e : all) bytes += e["size"].get<uint64_t>();
  EXPECT_EQ(stats["bytes"], bytes);
  EXPECT_DOUBLE_EQ(stats["disk_cache_size_gb"].get<double>(), static_cast<double>(bytes) / 1e9);
  EXPECT_EQ(cache("ls " + shell_quote(spec_)).exit_code, 0);
  const auto text = cache("stats " + shell_quote(spec_));
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("disk_cache_size_gb"), std::string::npos) << text.out;
}

TEST_P(CacheCommand, ClearsOneEntryWithItsDependentsOrAll) {
  auto r = cache("clear --prefix 2 " + shell_quote(spec_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("removed 2 entries"), std::string::npos) << r.out;
  EXPECT_EQ(json_of("ls --json " + shell_quote(spec_)).size(), 2u);
  r = cache("clear " + shell_quote(spec_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json_of("ls --json " + shell_quote(spec_)).empty());
}

TEST_P(CacheCommand, GcAppliesTheSizeCap) {
  // 1500 bytes: one entry (about 1 KB) fits, not two.
  const auto r = cache("gc --max-gb 0.0000015 " + shell_quote(spec_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_of("ls --json " + shell_quote(spec_)).size(), 1u);
}

TEST_P(CacheCommand, BadInputIsAClearError) {
  auto r = cache("ls --prefix xyz " + shell_quote(spec_));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--prefix"), std::string::npos) << r.err;
  r = cache("ls " + shell_quote(dir_ + "/nothing-here"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no cache at"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/nothing-here"));
  std::filesystem::create_directory(dir_ + "/not-a-cache");
  r = cache("clear " + shell_quote(dir_ + "/not-a-cache"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a disk cache directory"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/not-a-cache"));
  r = cache("gc --max-gb -1 " + shell_quote(spec_));
  EXPECT_NE(r.exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, CacheCommand, ::testing::Values("disk", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

// verify reads every file: damage the disk cache's files directly.
TEST(CacheCommandDisk, VerifyQuarantinesDamagedFilesAndTheirDependents) {
  const std::string dir = test::temp_dir() + "/cache";
  DiskTierOptions options;
  options.min_free_bytes = 0;
  {
    auto tier = open_cache_tier(dir, kModel, test::small_tier_geometry(), options);
    ASSERT_TRUE(tier.has_value()) << tier.error().message;
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 1, kNoKey)));
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 2, 1)));
    ASSERT_TRUE((*tier)->put(test::make_tier_entry(kModel, 10, kNoKey)));
  }
  auto r = run_command(shell_quote(test::cli_binary()) + " cache verify " + shell_quote(dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("verified 3 entries: 0 damaged"), std::string::npos) << r.out;
  {
    // Same size, one byte different: only reading the whole file finds it.
    const std::string file = dir + "/" + DiskStore::file_name(1);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('\x7f');
  }
  r = run_command(shell_quote(test::cli_binary()) + " cache verify " + shell_quote(dir));
  EXPECT_EQ(r.exit_code, 1);
  // Entry 2 goes with its parent before it is read: 2 entries read.
  EXPECT_NE(r.out.find("verified 2 entries: 1 damaged and quarantined, 1 dependents removed"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/quarantine/" + DiskStore::file_name(1)));
  r = run_command(shell_quote(test::cli_binary()) + " cache stats --json " + shell_quote(dir));
  const nlohmann::json stats = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(stats["entries"], 1);
  EXPECT_EQ(stats["quarantined"], 1);
}

}  // namespace
}  // namespace clm
