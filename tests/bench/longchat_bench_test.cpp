// `bench longchat` on the tiny real model: a few conversations that each
// grow to 4x their KV budget, run with the budgets and without.
#include <gtest/gtest.h>

#include "longchat_bench.h"
#include "support/test_paths.h"

namespace clm {
namespace {

LongchatBenchOptions small_run() {
  LongchatBenchOptions o;
  o.engine.load.model_path = test::shared_file("models/stories260K.gguf");
  o.engine.load.n_threads = 1;
  o.sessions = 3;
  o.turns = 3;
  o.engine.pool.block_size = 16;
  o.kv_budget_tokens = 96;  // the least the default policy takes with blocks of 16
  o.system_tokens = 20;
  o.reply_tokens = 8;
  return o;
}

TEST(LongchatBench, BudgetsBoundTheMemoryAndEveryConversationOutgrowsItsBudget) {
  const LongchatBenchOptions o = small_run();
  auto r = run_longchat_bench(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->target_tokens, 4 * 96);
  // Per sequence 96 / 16 budget blocks and one of slack; the 20-token system prompt once.
  EXPECT_EQ(r->bound_blocks, 3u * (6 + 1) + 2);
  EXPECT_LE(r->bounded.peak_blocks, r->bound_blocks);
  EXPECT_TRUE(r->within_bound());
  // Unbounded, the three conversations hold about their whole length.
  EXPECT_GE(r->unbounded.peak_blocks, 3u * 20);

  ASSERT_EQ(r->bounded.sessions.size(), 3u);
  for (const SessionOutcome& s : r->bounded.sessions) {
    EXPECT_GE(s.tokens, 4 * 96);
    EXPECT_FALSE(s.cut_short);
    EXPECT_GT(s.evicted_tokens, 0);
  }
  EXPECT_EQ(r->bounded_reached, 3);
  ASSERT_EQ(r->unbounded.sessions.size(), 3u);
  for (const SessionOutcome& s : r->unbounded.sessions) {
    EXPECT_GE(s.tokens, 4 * 96);
    EXPECT_FALSE(s.cut_short);
    EXPECT_EQ(s.evicted_tokens, 0);
  }
  EXPECT_EQ(r->unbounded.evicted_tokens, 0);
  EXPECT_EQ(r->unbounded_reached, 3);
  EXPECT_EQ(r->bounded.generated_tokens, 3 * 3 * 8);
  EXPECT_EQ(r->unbounded.generated_tokens, 3 * 3 * 8);

  const auto j = to_json(o, *r);
  EXPECT_EQ(j["bounded"]["conversations_reaching_target"], 3);
  EXPECT_EQ(j["unbounded"]["evicted_tokens"], 0);
  EXPECT_LT(j["memory_bounded_over_unbounded"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["quality"]["budget_share"].get<double>(), 0.25);
}

TEST(LongchatBench, TurnsAreSizedToReachTheTarget) {
  LongchatBenchOptions o = small_run();
  // (384 - 20) / 3 rounded up = 122 tokens a turn, 8 of them generated.
  auto user = longchat_user_tokens(o);
  ASSERT_TRUE(user) << user.error().message;
  EXPECT_EQ(*user, 114);
  o.turns = 50;  // 8 tokens a turn: all of them the reply
  EXPECT_FALSE(longchat_user_tokens(o));
}

TEST(LongchatBench, RefusesABudgetThePolicyCannotKeep) {
  LongchatBenchOptions o = small_run();
  o.kv_budget_tokens = 64;  // under the sink block, the 64-token window and one block to forget
  auto r = run_longchat_bench(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("below the least"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace clm
