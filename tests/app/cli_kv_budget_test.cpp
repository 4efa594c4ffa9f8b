// `clmcache run` and `chat` with --kv-budget-tokens on the real model: a
// generation of 4x the context runs to the end in a pool of one context
// (-c 192: 12 blocks of 16), and a chat conversation grows past 4x the
// context, forgetting as they go instead of stopping at the context. Bad
// budgets are refused clearly.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

constexpr int kCtx = 192;
// The pool holds one context (12 blocks of 16); a budget of 6 blocks leaves
// room for what the policy never evicts (top blocks, protected text).
constexpr const char* kBudget = " --kv-budget-tokens 96";

std::string cli() { return shell_quote(test::cli_binary()); }
std::string model_flags() {
  return " -m " + shell_quote(test::shared_file("models/stories260K.gguf")) + " -c " + std::to_string(kCtx) +
         " --block-size 16 --temp 0";
}

TEST(CliKvBudget, RunGeneratesFourContextsWithinOneContextOfMemory) {
  for (const char* policy : {"attention", "sinks-window"}) {
    SCOPED_TRACE(policy);
    const auto r = run_command(cli() + " run" + model_flags() + kBudget + std::string(" --evict ") + policy +
                               " -n " + std::to_string(4 * kCtx) + " --ignore-eos --json -p 'Once upon a time'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["token_ids"].size(), static_cast<std::size_t>(4 * kCtx));
    EXPECT_EQ(j["stop_reason"], "length");
    EXPECT_GE(j["evicted_tokens"].get<int>(), 4 * kCtx - kCtx);
  }
  // Without a budget the same run stops at the context.
  const auto plain = run_command(cli() + " run" + model_flags() + " -n " + std::to_string(4 * kCtx) +
                                 " --ignore-eos --json -p 'Once upon a time'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto j = nlohmann::json::parse(plain.out, nullptr, false);
  EXPECT_LT(j["token_ids"].size(), static_cast<std::size_t>(kCtx));
  EXPECT_EQ(j["evicted_tokens"], 0);
}

TEST(CliKvBudget, ABudgetNearTheContextStillRunsOnInTheDefaultPool) {
  // The default pool holds one sequence: with a budget, room beyond it for
  // what the policy keeps. A pool of just the context (5 blocks of 32 here)
  // ended this run with "length" after 188 tokens.
  const auto r = run_command(cli() + " run -m " + shell_quote(test::shared_file("models/stories260K.gguf")) +
                             " -c 160 --kv-budget-tokens 128 --temp 0 -n 512 --ignore-eos --json -p 'Once upon a time'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["token_ids"].size(), 512u);
  EXPECT_GT(j["evicted_tokens"].get<int>(), 512 - 160);
}

TEST(CliKvBudget, ChatConversationOutgrowsTheContext) {
  // Eighteen turns of plain sentences: the conversation the last turn sends
  // is past 4x the context. The chat's own text (its replies) is full of
  // what the default protect rules keep, more than one context's pool holds
  // at this budget, so the pool is 1 MiB here (about 1600 tokens).
  std::string lines;
  for (int i = 0; i < 18; ++i)
    lines += "the little dog ran to the park and saw a big red ball. he played with it all day and went home.\\n";
  const auto r = run_command("printf '" + lines + "' | " + cli() + " chat" + model_flags() + kBudget +
                             std::string(" --kv-memory-mb 1 -n 8"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("clmcache:"), std::string::npos) << r.err;
  const auto at = r.err.rfind(" prompt tokens:");
  ASSERT_NE(at, std::string::npos) << r.err;
  int prompt_tokens = 0;
  ASSERT_EQ(std::sscanf(r.err.c_str() + r.err.rfind('[', at), "[%d prompt tokens", &prompt_tokens), 1);
  EXPECT_GT(prompt_tokens, 4 * kCtx) << r.err;
  int forgotten = 0;
  const auto f = r.err.rfind("generated; ");
  ASSERT_NE(f, std::string::npos) << r.err;
  ASSERT_EQ(std::sscanf(r.err.c_str() + f, "generated; %d forgotten", &forgotten), 1) << r.err;
  // Whole blocks; fewer than the prompt beyond the budget, since protected
  // blocks stay (the sequence runs over budget rather than losing them).
  EXPECT_GT(forgotten, 0);
  EXPECT_EQ(forgotten % 16, 0);
  EXPECT_LT(forgotten, prompt_tokens);
}

TEST(CliKvBudget, RefusesBudgetsThePolicyCannotKeep) {
  const auto small = run_command(cli() + " run" + model_flags() + " --kv-budget-tokens 32 -n 4 -p 'Hi'");
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("below the least the eviction policy needs"), std::string::npos) << small.err;
  const auto kind = run_command(cli() + " run" + model_flags() + kBudget + " --evict lru -n 4 -p 'Hi'");
  EXPECT_NE(kind.exit_code, 0);
  EXPECT_NE(kind.err.find("--evict"), std::string::npos) << kind.err;
}

}  // namespace
}  // namespace clm
