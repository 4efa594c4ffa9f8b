// The disk tier through the CLI: a second `clmcache run` process, started
// after the first has exited, takes the prompt's full blocks from the disk
// cache the first one wrote (a directory or sqlite:FILE) and generates the
// same tokens; a damaged entry is a miss that changes nothing but speed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/story_prompt.h"
#include "support/test_paths.h"

namespace clm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::run_command;
using test::shell_quote;

const char* const kPrompt = test::kStoryPrompt;

json run_with_disk_cache(const std::string& spec) {
  const std::string cmd = shell_quote(test::cli_binary()) + " run --json --temp 0 -n 8 --block-size 16 -m " +
                          shell_quote(test::shared_file("models/stories260K.gguf")) + " --disk-cache " +
                          shell_quote(spec) + " --min-free-space-gb 0 -p " + shell_quote(kPrompt);
  const auto r = run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json{};
}

// Full blocks of the prompt; a prompt ending on a block boundary still
// computes its last token (its logits are needed).
int reusable_tokens(const json& run) {
  const int n = static_cast<int>(run["prompt_token_ids"].size());
  return n % 16 == 0 ? n - 1 : n / 16 * 16;
}

class DiskCacheCli : public testing::TestWithParam<std::string> {};

TEST_P(DiskCacheCli, ARestartedProcessReusesWhatTheFirstWrote) {
  const std::string dir = test::temp_dir();
  const std::string spec = GetParam() == "sqlite" ? "sqlite:" + dir + "/cache.sqlite" : dir + "/cache";
  const json first = run_with_disk_cache(spec);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["cached_tokens"], 0);
  ASSERT_GT(first["prompt_token_ids"].size(), 32u);
  const json second = run_with_disk_cache(spec);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["cached_tokens"].get<int>(), reusable_tokens(first));
  EXPECT_EQ(first["token_ids"], second["token_ids"]);
}

INSTANTIATE_TEST_SUITE_P(Stores, DiskCacheCli, testing::Values("dir", "sqlite"));

TEST(DiskCacheCliFaults, ADamagedEntryIsAMissAndTheOutputStaysTheSame) {
  const std::string dir = test::temp_dir() + "/cache";
  const json first = run_with_disk_cache(dir);
  ASSERT_FALSE(first.is_null());
  // Flip a byte in the middle of every entry file.
  int damaged = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ".safetensors") continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(fs::file_size(f.path()) / 2);
    io.seekg(middle);
    char c = 0;
    io.get(c);
    io.seekp(middle);
    io.put(static_cast<char>(c ^ 0x40));
    ++damaged;
  }
  ASSERT_GT(damaged, 0);
  const json second = run_with_disk_cache(dir);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["cached_tokens"], 0);
  EXPECT_EQ(first["token_ids"], second["token_ids"]);
  EXPECT_TRUE(fs::exists(dir + "/quarantine"));
}

TEST(DiskCacheCliFaults, AnUnusableSpecIsAClearError) {
  const std::string file = test::temp_dir() + "/not-a-directory";
  std::ofstream(file) << "x";
  const auto r = run_command(shell_quote(test::cli_binary()) + " run -n 1 -m " +
                             shell_quote(test::shared_file("models/stories260K.gguf")) + " --disk-cache " +
                             shell_quote(file + "/sub") + " -p Once");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--disk-cache"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
