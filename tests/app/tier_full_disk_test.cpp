// A store on a full filesystem: the real thing, a tmpfs of a few MiB mounted
// in a mount namespace of the test's own (`unshare --user --map-root-user
// --mount`, which needs no privileges), filled to the last byte. A healthy
// store that cannot be opened then is left exactly as it is, `clmcache run`
// answers without that tier and says so, and the next start, with space
// back, finds every entry the first run stored.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/story_prompt.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::run_command;
using test::shell_quote;

const char* const kPrompt = test::kStoryPrompt;

// Runs inside the namespace. $1: the mount point, $2: the store's spec
// relative to it ("sqlite:c.sqlite" or "dir"), $3: where the outputs go
// (outside the tmpfs), $4: clmcache, $5: the model, $6: the prompt.
const char* kScript = R"(set -u
fs=$1 spec=$2 out=$3 bin=$4 model=$5 prompt=$6
mount -t tmpfs -o size=16m tmpfs "$fs" || exit 97
cd "$fs"
ask() { "$bin" run --json --temp 0 -n 4 --block-size 16 -m "$model" --min-free-space-gb 0 --disk-cache "$spec" -p "$prompt"; }
# SQLite's -wal and -shm side files are its own: it makes them when it opens
# a database (there they stay empty) and removes them at the last close.
listing() { find . -path ./filler -prune -o -type f ! -name '*-wal' ! -name '*-shm' -print | sort | xargs sha256sum; }
ask > "$out/first.json" 2> "$out/first.err" || exit 98
listing > "$out/before.txt"
head -c 64M /dev/zero > filler 2> /dev/null
df -k . | tail -1 > "$out/df.txt"
ask > "$out/full.json" 2> "$out/full.err"
echo $? > "$out/full.rc"
listing > "$out/after.txt"
rm filler
ask > "$out/again.json" 2> "$out/again.err"
echo $? > "$out/again.rc"
)";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void check_full_disk(const std::string& spec) {
  const std::string dir = test::temp_dir();
  const std::string fs = dir + "/fs", out = dir + "/out";
  ASSERT_EQ(run_command("mkdir -p " + shell_quote(fs) + " " + shell_quote(out)).exit_code, 0);
  {
    std::ofstream(dir + "/script.sh") << kScript;
  }
  const auto r = run_command("unshare --user --map-root-user --mount sh " + shell_quote(dir + "/script.sh") + " " +
                             shell_quote(fs) + " " + shell_quote(spec) + " " + shell_quote(out) + " " +
                             shell_quote(test::cli_binary()) + " " +
                             shell_quote(test::shared_file("models/stories260K.gguf")) + " " + shell_quote(kPrompt));
  ASSERT_NE(r.exit_code, 97) << "cannot mount a tmpfs in a user namespace: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err << slurp(out + "/first.err");
  const json first = json::parse(slurp(out + "/first.json"));
  const int n_prompt = static_cast<int>(first["prompt_token_ids"].size());
  ASSERT_GT(n_prompt, 32);

  // Full: the answer is the same, computed without the tier, which was not
  // touched (no file renamed, added or changed).
  EXPECT_EQ(slurp(out + "/full.rc"), "0\n") << slurp(out + "/full.err") << slurp(out + "/df.txt");
  const std::string full_err = slurp(out + "/full.err");
  EXPECT_NE(full_err.find("the disk is nearly full; it is left as it is"), std::string::npos) << full_err;
  EXPECT_NE(full_err.find("running without this tier"), std::string::npos) << full_err;
  const json full = json::parse(slurp(out + "/full.json"), nullptr, false);
  ASSERT_FALSE(full.is_discarded()) << slurp(out + "/full.json");
  EXPECT_EQ(full["token_ids"], first["token_ids"]);
  EXPECT_EQ(full["cached_tokens"], 0);
  EXPECT_EQ(slurp(out + "/after.txt"), slurp(out + "/before.txt"));

  // Space back: the same store, with everything the first run put there.
  EXPECT_EQ(slurp(out + "/again.rc"), "0\n") << slurp(out + "/again.err");
  const json again = json::parse(slurp(out + "/again.json"));
  EXPECT_EQ(again["cached_tokens"].get<int>(), n_prompt % 16 == 0 ? n_prompt - 1 : n_prompt / 16 * 16);
  EXPECT_EQ(again["token_ids"], first["token_ids"]);
  EXPECT_EQ(slurp(out + "/again.err").find("running without"), std::string::npos);
}

TEST(TierFullDisk, AnSqliteStoreIsLeftAsItIsAndUsedAgainWhenSpaceReturns) { check_full_disk("sqlite:c.sqlite"); }

TEST(TierFullDisk, ADiskCacheDirectoryIsLeftAsItIsAndUsedAgainWhenSpaceReturns) { check_full_disk("cache"); }

}  // namespace
}  // namespace clm
