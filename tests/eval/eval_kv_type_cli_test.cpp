// Drives `clmcache eval kv-type` end to end on the real model: a type against
// itself is exact (KL 0, top-1 1, ΔNLL 0: two engines of one type compute
// the same bits), and q8_0 against f16 changes the distributions a little
// but not nothing; a set of plain texts is scored at every position after
// each text's ask.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

nlohmann::json eval_kv_type(const std::string& types, const std::string& cases = "tiny_reuse_cases.json") {
  const auto r = run_command(shell_quote(test::cli_binary()) + " eval kv-type --cases " +
                             shell_quote(std::string(CLMCACHE_EVAL_TEST_DATA) + "/" + cases) + " -m " +
                             shell_quote(test::shared_file("models/stories260K.gguf")) +
                             " --greedy-tokens 12 -t 1 -o json --reference f16 " + types);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

TEST(EvalKvTypeCli, ATypeAgainstItselfIsExact) {
  const auto out = eval_kv_type("--kv-type f16");
  ASSERT_FALSE(out.is_null());
  EXPECT_EQ(out["cases"], 2);
  EXPECT_GT(out["positions"].get<int>(), 12 + 5);
  EXPECT_EQ(out["mean_kl"].get<double>(), 0.0);
  EXPECT_EQ(out["top1"].get<double>(), 1.0);
  EXPECT_EQ(out["delta_nll"].get<double>(), 0.0);
  EXPECT_EQ(out["greedy_match"], out["greedy_total"]);
}

TEST(EvalKvTypeCli, Q8AgainstF16IsCloseButNotEqual) {
  const auto out = eval_kv_type("--cache-type-k q8_0 --cache-type-v q8_0");
  ASSERT_FALSE(out.is_null());
  EXPECT_EQ(out["tested"], "q8_0");
  EXPECT_EQ(out["reference"], "f16");
  EXPECT_GT(out["mean_kl"].get<double>(), 0.0);
  EXPECT_LT(out["mean_kl"].get<double>(), 0.05);
  EXPECT_GT(out["top1"].get<double>(), 0.8);
}

// Each text's first 8 tokens ask; every later token is a scored position,
// so the count is the texts' tokens less the asks (and fp8 K moves them).
TEST(EvalKvTypeCli, PlainTextsAreScoredAfterTheirAsk) {
  const auto same = eval_kv_type("--kv-type f16 --text-ask-tokens 8", "tiny_text_cases.json");
  ASSERT_FALSE(same.is_null());
  EXPECT_EQ(same["cases"], 2);
  EXPECT_EQ(same["case_set"], "tiny_texts");
  EXPECT_GT(same["positions"].get<int>(), 2 * 20);
  EXPECT_EQ(same["mean_kl"].get<double>(), 0.0);
  const auto longer_ask = eval_kv_type("--kv-type f16 --text-ask-tokens 12", "tiny_text_cases.json");
  ASSERT_FALSE(longer_ask.is_null());
  EXPECT_EQ(longer_ask["positions"].get<int>(), same["positions"].get<int>() - 2 * 4);
  const auto fp8 = eval_kv_type("--cache-type-k fp8 --text-ask-tokens 8", "tiny_text_cases.json");
  ASSERT_FALSE(fp8.is_null());
  EXPECT_EQ(fp8["positions"], same["positions"]);
  EXPECT_GT(fp8["mean_kl"].get<double>(), 0.0);
}

}  // namespace
}  // namespace clm
