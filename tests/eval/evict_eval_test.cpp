// `eval evict` on the real model, on a few of the committed long-story
// cases: with a budget of the whole prompt nothing is forgotten and every
// policy must match the full cache exactly (statistics and the eviction
// mechanism change no logit); with a budget, the window baselines keep
// exactly what the budget allows and forgetting shows in the NLL.
#include "evict_eval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "evict_cases.h"
#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

std::string cases_path() { return std::string(CLMCACHE_EVAL_TEST_DATA) + "/../../../eval/cases/long_stories.json"; }

EvictCaseSet first_cases(std::size_t n) {
  auto set = load_evict_cases(cases_path());
  EXPECT_TRUE(set) << (set ? "" : set.error().message);
  set->cases.resize(n);
  return *set;
}

EvictEvalOptions small_options() {
  EvictEvalOptions o;
  o.model_path = test::shared_file("models/stories260K.gguf");
  o.prompt_tokens = 193;
  o.continuation_tokens = 8;
  o.n_threads = 2;
  return o;
}

TEST(EvictEval, AWholePromptBudgetForgetsNothingAndMatchesTheFullCacheExactly) {
  EvictEvalOptions o = small_options();
  o.budgets = {1.0};
  auto r = run_evict_eval(o, first_cases(3));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->variants.size(), 4u);
  EXPECT_GT(r->full_nll, 0.0);
  for (const auto& v : r->variants) {
    SCOPED_TRACE(std::string(evict_kind_name(v.kind)));
    EXPECT_EQ(v.kept_share, 1.0);
    EXPECT_EQ(v.delta_nll_mean(), 0.0);
    EXPECT_EQ(v.top1_agreement(), 1.0);
    EXPECT_EQ(v.positions, 3 * 8);
  }
}

TEST(EvictEval, BudgetsAreKeptAndForgettingShows) {
  EvictEvalOptions o = small_options();
  o.budgets = {0.25};
  o.policies = {EvictKind::Window, EvictKind::SinksWindow, EvictKind::Attention};
  o.policy.protect_patterns.clear();
  o.policy.recent_tokens = 16;  // the default 64 alone would exceed a budget of 48
  auto r = run_evict_eval(o, first_cases(3));
  ASSERT_TRUE(r) << r.error().message;
  for (const auto& v : r->variants) {
    SCOPED_TRACE(std::string(evict_kind_name(v.kind)));
    // The budget is 48 of 193 tokens; the baselines forget whole blocks down to it.
    if (v.kind != EvictKind::Attention) {
      EXPECT_NEAR(v.kept_share, 48.0 / 192.0, 1.0 / 192.0);
    }
    EXPECT_LT(v.kept_share, 0.5);
    bool changed = false;
    for (double d : v.case_delta_nll) changed |= d != 0.0;
    EXPECT_TRUE(changed) << "forgetting three quarters of the prompt changed no prediction";
  }
  const std::string md = evict_markdown(*r);
  EXPECT_NE(md.find("| sinks-window | 25% |"), std::string::npos) << md;
}

TEST(EvictEval, CompactPositionsChangeNothingForAPlainWindowButMoveTheSinks) {
  // RoPE scores depend only on the distance between query and key. A plain
  // window keeps one contiguous run of tokens, so renumbering it from 0
  // (K re-rotated) keeps every distance: the predictions must not change
  // beyond rounding. Sinks + window has a gap between the sink and the
  // window; closing it brings the sink closer, which must show.
  EvictEvalOptions o = small_options();
  o.kv_types = KvType::F32;  // the re-rotated K is not rounded to f16
  o.budgets = {0.25};
  o.policies = {EvictKind::Window, EvictKind::SinksWindow};
  o.policy.recent_tokens = 16;
  auto keep = run_evict_eval(o, first_cases(3));
  ASSERT_TRUE(keep) << keep.error().message;
  o.compact_positions = true;
  auto compact = run_evict_eval(o, first_cases(3));
  ASSERT_TRUE(compact) << compact.error().message;
  ASSERT_EQ(keep->variants.size(), 2u);
  ASSERT_EQ(compact->variants.size(), 2u);
  EXPECT_EQ(keep->full_nll, compact->full_nll);
  const EvictVariantResult& wk = keep->variants[0];
  const EvictVariantResult& wc = compact->variants[0];
  EXPECT_EQ(wk.kept_share, wc.kept_share);
  EXPECT_EQ(wk.top1_agree, wc.top1_agree);
  for (std::size_t i = 0; i < wk.case_delta_nll.size(); ++i)
    EXPECT_NEAR(wk.case_delta_nll[i], wc.case_delta_nll[i], 1e-4) << "case " << i;
  const EvictVariantResult& sk = keep->variants[1];
  const EvictVariantResult& sc = compact->variants[1];
  EXPECT_EQ(sk.kept_share, sc.kept_share);
  double moved = 0.0;
  for (std::size_t i = 0; i < sk.case_delta_nll.size(); ++i)
    moved = std::max(moved, std::abs(sk.case_delta_nll[i] - sc.case_delta_nll[i]));
  EXPECT_GT(moved, 1e-3) << "closing the gap after the sink changed no prediction";
  EXPECT_NE(evict_markdown(*compact).find("compacted"), std::string::npos);
}

TEST(EvictEval, ACaseShorterThanPromptAndContinuationIsAnError) {
  EvictEvalOptions o = small_options();
  o.prompt_tokens = 5000;
  o.budgets = {0.5};
  auto r = run_evict_eval(o, first_cases(1));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("context"), std::string::npos) << r.error().message;
}

TEST(EvictCases, MalformedCaseFilesAreRefusedWithTheCaseNamed) {
  EXPECT_FALSE(parse_evict_cases("[]"));
  EXPECT_FALSE(parse_evict_cases(R"({"cases": []})"));
  auto missing = parse_evict_cases(R"({"cases": [{"id": "a"}]})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("'text'"), std::string::npos);
  auto dup = parse_evict_cases(R"({"cases": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]})");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("duplicate"), std::string::npos);
  EXPECT_TRUE(parse_evict_cases(R"({"cases": [{"id": "a", "text": "x", "extra": 1}]})"));
}

TEST(EvictEvalCli, BadFlagsGetAClearMessage) {
  const std::string base = test::shell_quote(test::cli_binary()) + " eval evict --cases " +
                           test::shell_quote(cases_path()) + " -m " +
                           test::shell_quote(test::shared_file("models/stories260K.gguf"));
  auto r = test::run_command(base + " --policies lru");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown eviction policy 'lru'"), std::string::npos) << r.err;
  r = test::run_command(base + " --protect '(unclosed'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("protect rule"), std::string::npos) << r.err;
  r = test::run_command(base + " --decay 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("decay"), std::string::npos) << r.err;
  r = test::run_command(base + " --protect-share 1.5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--protect-share"), std::string::npos) << r.err;
  r = test::run_command(base + " --evict-positions shift");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--evict-positions"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
