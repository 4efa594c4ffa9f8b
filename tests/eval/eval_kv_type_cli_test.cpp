// Drives `clmcache eval kv-type` end to end on the real model: a type against
// itself is exact (KL 0, top-1 1, ΔNLL 0: two engines of one type compute
// the same bits), and q8_0 against f16 changes the distributions a little
// but not nothing.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

nlohmann::json eval_kv_type(const std::string& types) {
  const auto r = run_command(shell_quote(test::cli_binary()) + " eval kv-type --cases " +
                             shell_quote(std::string(CLMCACHE_EVAL_TEST_DATA) + "/tiny_reuse_cases.json") + " -m " +
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

}  // namespace
}  // namespace clm
