// Drives `clmcache bench reuse` on a tiny synthetic model: the prompts it
// dumps are the changes it claims, and every mode's token accounting is
// what that mode can reuse of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

constexpr int kTokens = 200;
constexpr int kEdit = 20;
constexpr int kBlock = 32;

std::string cli() { return shell_quote(test::cli_binary()); }

std::string tiny_model() {
  const std::string path = test::temp_dir() + "/bench-reuse-tiny.gguf";
  const auto made = run_command(cli() + " make-model -o " + shell_quote(path));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return path;
}

std::vector<int> slice(const std::vector<int>& v, std::size_t begin, std::size_t end) {
  return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)};
}

std::string size_flags() { return " --tokens " + std::to_string(kTokens) + " --edit " + std::to_string(kEdit); }

nlohmann::json dump_prompts(const std::string& model) {
  const std::string out = test::temp_dir() + "/bench-reuse-prompts.json";
  const auto r = run_command(cli() + " bench reuse -m " + shell_quote(model) + size_flags() + " --dump-prompts " +
                             shell_quote(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << "measured although asked for the prompts only: " << r.out;
  std::ifstream in(out);
  return nlohmann::json::parse(in);
}

int common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<int>(ia - a.begin());
}

TEST(CliBenchReuse, DumpedPromptsAreTheBaseChangedThreeWays) {
  const auto j = dump_prompts(tiny_model());
  const auto base = j["base"].get<std::vector<int>>();
  const auto edit = j["edit"].get<std::vector<int>>();
  const auto insert = j["insert"].get<std::vector<int>>();
  const auto erase = j["delete"].get<std::vector<int>>();
  const std::size_t n = kTokens, k = kEdit, mid = n / 2;
  ASSERT_EQ(base.size(), n);
  ASSERT_EQ(edit.size(), n);
  ASSERT_EQ(insert.size(), n + k);
  ASSERT_EQ(erase.size(), n - k);
  // BOS first everywhere, then the change.
  for (const auto* p : {&edit, &insert, &erase}) EXPECT_EQ(p->front(), base.front());
  EXPECT_NE(slice(edit, 1, 1 + k), slice(base, 1, 1 + k));
  EXPECT_EQ(slice(edit, 1 + k, n), slice(base, 1 + k, n));
  EXPECT_EQ(slice(insert, 0, mid), slice(base, 0, mid));
  EXPECT_EQ(slice(insert, mid + k, n + k), slice(base, mid, n));
  EXPECT_NE(slice(insert, mid, mid + k), slice(base, mid, mid + k));
  EXPECT_EQ(slice(erase, 1, n - k), slice(base, 1 + k, n));
}

TEST(CliBenchReuse, EachModeReusesWhatItCan) {
  const std::string model = tiny_model();
  const auto prompts = dump_prompts(model);
  const auto base = prompts["base"].get<std::vector<int>>();
  const auto r = run_command(cli() + " bench reuse -m " + shell_quote(model) + size_flags() +
                             " -r 1 -t 1 --agree 4 --reuse-lead 0 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["block_size"], kBlock);
  ASSERT_EQ(j["scenarios"].size(), 3u);
  for (const auto& s : j["scenarios"]) {
    const std::string name = s["name"];
    SCOPED_TRACE(name);
    const auto prompt = prompts[name].get<std::vector<int>>();
    const int n = s["prompt_tokens"];
    ASSERT_EQ(n, static_cast<int>(prompt.size()));
    // The cache holds exactly the base conversation when the prompt comes,
    // so the exact prefix is everything up to the first changed token.
    const int same = common_prefix(prompt, base);
    ASSERT_LT(same, n - 1);
    for (const std::string mode : {"off", "prefix", "shift"}) {
      SCOPED_TRACE(mode);
      const auto& m = s["modes"][mode];
      const auto& c = m["reuse"];
      const int prefix = c["prefix"], shift = c["shift"], recomputed = c["recomputed"], computed = c["computed"];
      EXPECT_EQ(prefix + shift + recomputed + computed, n);
      EXPECT_EQ(m["ttft_ms"]["n"], 1);
      EXPECT_GT(m["ttft_ms"]["median"].get<double>(), 0.0);
      EXPECT_EQ(m["greedy_tokens"].size(), 4u);
      if (mode == "off") {
        EXPECT_EQ(computed, n);
        continue;
      }
      EXPECT_EQ(prefix, same);
      EXPECT_EQ(recomputed, 0);  // --reuse-lead 0
      if (mode == "prefix") {
        EXPECT_EQ(shift, 0);
        // Exact reuse never changes the output.
        EXPECT_EQ(m["greedy_agree_with_off"], 4);
        EXPECT_EQ(m["greedy_tokens"], s["modes"]["off"]["greedy_tokens"]);
      } else {
        // Everything after the change is cached, elsewhere: shift copies it
        // all but the last prompt token (always computed), at most the
        // cached conversation's last, partly filled block, and what the type
        // guard refuses: a sentence or line the change cut into may change
        // type (a question losing its start), and is then computed. Most of
        // the rest is copied.
        const int changed = name == "delete" ? 0 : kEdit;
        const int after_change = n - same - changed;
        EXPECT_GE(shift, after_change / 2);
        EXPECT_LE(computed, after_change / 2 + changed + 1 + kBlock);
        EXPECT_GE(computed, 1);
      }
    }
    EXPECT_GT(s["shift_over_off"].get<double>(), 0.0);
    EXPECT_GT(s["prefix_over_off"].get<double>(), 0.0);
  }
}

TEST(CliBenchReuse, LeadTokensAreRecomputed) {
  const std::string model = tiny_model();
  const auto r = run_command(cli() + " bench reuse -m " + shell_quote(model) + size_flags() +
                             " -r 1 -t 1 --agree 1 --reuse-lead 4 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reuse_lead"], 4);
  for (const auto& s : j["scenarios"]) {
    const auto& c = s["modes"]["shift"]["reuse"];
    EXPECT_GT(c["shift"].get<int>(), 0) << s["name"];
    EXPECT_GE(c["recomputed"].get<int>(), 4) << s["name"];
    EXPECT_EQ(c["recomputed"].get<int>() % 4, 0) << s["name"];
  }
}

TEST(CliBenchReuse, RejectsAnEditLongerThanTheConversation) {
  const std::string model = tiny_model();
  const auto r = run_command(cli() + " bench reuse -m " + shell_quote(model) + " --tokens 50 --edit 60 -r 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--edit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
