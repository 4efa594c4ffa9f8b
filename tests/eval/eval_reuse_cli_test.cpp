// Drives `clmcache eval reuse` end to end on the real model. Off against
// off, and prefix (bitwise exact) against off, must give KL exactly 0 and
// top-1 agreement 1: a real check of prefix reuse's exactness promise.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }
std::string model() { return shell_quote(test::shared_file("models/stories260K.gguf")); }
std::string tiny_cases() { return shell_quote(std::string(CLMCACHE_EVAL_TEST_DATA) + "/tiny_reuse_cases.json"); }

const nlohmann::json& variant(const nlohmann::json& out, const std::string& name) {
  for (const auto& v : out["variants"])
    if (v["name"] == name) return v;
  ADD_FAILURE() << "no variant " << name;
  static const nlohmann::json none;
  return none;
}

TEST(EvalReuseCli, OffAndPrefixAreExactOnTheRealModel) {
  const std::string json_path = test::temp_dir() + "/out.json";
  const auto r = run_command(cli() + " eval reuse --cases " + tiny_cases() + " -m " + model() +
                             " --modes off,prefix --greedy-tokens 12 -t 1 --json " + shell_quote(json_path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| prefix |"), std::string::npos) << r.out;
  std::ifstream in(json_path);
  const auto out = nlohmann::json::parse(in);
  ASSERT_EQ(out["cases"].size(), 2u);
  EXPECT_EQ(out["n_vocab"], 512);
  for (const std::string name : {"off", "prefix"}) {
    const auto& v = variant(out, name);
    SCOPED_TRACE(name);
    // 12 greedy tokens for the first case, the 15-token reference text for
    // the second; nothing of the continuation is cached, so all are scored.
    EXPECT_GT(v["positions"].get<int>(), 12 + 5);
    EXPECT_EQ(v["missing_positions"], 0);
    EXPECT_EQ(v["scored_positions"], v["positions"]);
    EXPECT_EQ(v["kl_mean"].get<double>(), 0.0);
    EXPECT_EQ(v["kl_max"].get<double>(), 0.0);
    EXPECT_EQ(v["top1_agreement"].get<double>(), 1.0);
    EXPECT_EQ(v["greedy_exact_cases"], 2);
    EXPECT_EQ(v["greedy_match_tokens"], 24);
    EXPECT_EQ(v["count_mismatches"], 0);
  }
  // Off computes everything; prefix really reused the cached prefix.
  const auto& off = variant(out, "off");
  EXPECT_EQ(off["tokens"]["prefix"], 0);
  EXPECT_EQ(off["tokens"]["shift"], 0);
  EXPECT_DOUBLE_EQ(off["prefill_flops_share"].get<double>(), 1.0);
  const auto& prefix = variant(out, "prefix");
  EXPECT_GT(prefix["tokens"]["prefix"].get<int>(), 40);
  EXPECT_EQ(prefix["tokens"]["shift"], 0);
  EXPECT_LT(prefix["prefill_flops_share"].get<double>(), 1.0);
  // In the shared-prefix case the whole cached prompt is unchanged and
  // prefix reuse supplies all of it.
  const auto& shared = out["cases"][0];
  EXPECT_EQ(shared["id"], "shared-prefix");
  EXPECT_EQ(shared["warm_tokens"].size(), 1u);
  EXPECT_EQ(shared["unchanged_tokens"], shared["warm_tokens"][0]);
  EXPECT_EQ(shared["variants"]["prefix"]["unchanged_reused_tokens"], shared["unchanged_tokens"]);
  EXPECT_EQ(shared["continuation_tokens"], 12);
}

TEST(EvalReuseCli, BadCasesFilesExitNonZeroWithAMessage) {
  const std::string dir = test::temp_dir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return shell_quote(dir + "/" + name);
  };
  const std::string base = cli() + " eval reuse -m " + model() + " --cases ";

  auto r = run_command(base + write("missing.json", R"({"cases": [{"id": "a", "ask": "Once"}]})"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("case 0 (a): missing 'warm'"), std::string::npos) << r.err;

  r = run_command(base + write("type.json", R"({"cases": [{"id": "a", "warm": [], "ask": 3}]})"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'ask' must be a string"), std::string::npos) << r.err;

  r = run_command(base + write("syntax.json", "{\"cases\": ["));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;

  r = run_command(base + shell_quote(dir + "/absent.json"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot open cases file"), std::string::npos) << r.err;

  // A prompt longer than the context (here 64 tokens) is refused before
  // anything runs.
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "Lily went to the park. ";
  r = run_command(base + write("long.json", R"({"cases": [{"id": "long", "warm": [], "ask": ")" + long_text + R"("}]})") +
                  " -c 64");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("case 0 (long): 'ask' is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("longer than the context of 64"), std::string::npos) << r.err;

  r = run_command(base + tiny_cases() + " --modes off,sideways");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown reuse mode 'sideways'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
