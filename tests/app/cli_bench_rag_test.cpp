// Drives `clmcache bench rag` on stories260K at tiny sizes: every mode's
// token accounting is what that mode can reuse of precomputed chunks, and
// the report has the shape the documentation promises.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

constexpr int kSystem = 20;
constexpr int kChunks = 3;
constexpr int kChunkTokens = 40;
constexpr int kPool = 6;
constexpr int kQuestion = 10;
constexpr int kRequests = 2;
constexpr int kAgree = 4;

std::string bench_rag(const std::string& extra, int pool = kPool) {
  return shell_quote(test::cli_binary()) + " bench rag -m " +
         shell_quote(test::shared_file("models/stories260K.gguf")) + " -t 1 --system-tokens " +
         std::to_string(kSystem) + " --chunks " + std::to_string(kChunks) + " --chunk-tokens " +
         std::to_string(kChunkTokens) + " --pool " + std::to_string(pool) + " --question-tokens " +
         std::to_string(kQuestion) + " -r " + std::to_string(kRequests) + " --agree " + std::to_string(kAgree) + extra;
}

int count(const nlohmann::json& mode, const char* kind) { return mode["reuse_total"][kind].get<int>(); }

TEST(CliBenchRag, EachModeReusesWhatItCanOfThePrecomputedChunks) {
  const std::string json_path = test::temp_dir() + "/bench-rag.json";
  const auto r = run_command(bench_rag(" -o json --json " + shell_quote(json_path)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::ifstream file(json_path);
  EXPECT_EQ(nlohmann::json::parse(file), j);

  const int n = kSystem + kChunks * kChunkTokens + kQuestion;
  ASSERT_EQ(j["prompt_tokens"], n);
  EXPECT_EQ(j["warm_tokens"], kSystem + kPool * kChunkTokens);
  EXPECT_EQ(j["reuse_lead"], 0);
  EXPECT_EQ(j["blend_ratio"], "0.15");
  ASSERT_EQ(j["drawn"].size(), static_cast<std::size_t>(kRequests));
  for (const auto& drawn : j["drawn"]) {
    const auto picks = drawn.get<std::vector<int>>();
    ASSERT_EQ(picks.size(), static_cast<std::size_t>(kChunks));
    EXPECT_EQ(std::set<int>(picks.begin(), picks.end()).size(), picks.size()) << "a chunk drawn twice";
    for (int p : picks) EXPECT_TRUE(p >= 0 && p < kPool) << p;
  }

  const auto& modes = j["modes"];
  ASSERT_EQ(modes.size(), 4u);
  for (const char* name : {"off", "prefix", "shift", "blend"}) {
    SCOPED_TRACE(name);
    const auto& m = modes[name];
    EXPECT_EQ(m["ttft_ms"]["n"], kRequests);
    EXPECT_GT(m["ttft_ms"]["median"].get<double>(), 0.0);
    EXPECT_GE(m["ttft_ms"]["p90"].get<double>(), m["ttft_ms"]["median"].get<double>());
    EXPECT_GT(m["over_off"].get<double>(), 0.0);
    // Every prompt token's K/V came from exactly one place.
    EXPECT_EQ(count(m, "prefix") + count(m, "shift") + count(m, "recomputed") + count(m, "computed"), kRequests * n);
    EXPECT_GE(m["first_token_agree_with_off"].get<int>(), 0);
    EXPECT_LE(m["first_token_agree_with_off"].get<int>(), kRequests);
  }

  const auto& off = modes["off"];
  EXPECT_EQ(count(off, "computed"), kRequests * n);
  EXPECT_EQ(off["blend_probed_total"], 0);
  EXPECT_DOUBLE_EQ(off["prefill_flops_over_off"].get<double>(), 1.0);
  EXPECT_EQ(off["greedy_agree_with_off"], kRequests * kAgree);

  // The chunks were computed at other positions, so only the system prompt
  // is an exact prefix; exact reuse never changes the output.
  const auto& prefix = modes["prefix"];
  EXPECT_EQ(count(prefix, "prefix"), kRequests * kSystem);
  EXPECT_EQ(count(prefix, "shift"), 0);
  EXPECT_EQ(count(prefix, "recomputed"), 0);
  EXPECT_EQ(prefix["greedy_agree_with_off"], kRequests * kAgree);
  EXPECT_EQ(prefix["first_token_agree_with_off"], kRequests);

  // Shift copies the chunks (lead 0: none recomputed); the question is
  // cached nowhere.
  const auto& shift = modes["shift"];
  EXPECT_EQ(count(shift, "prefix"), kRequests * kSystem);
  EXPECT_GT(count(shift, "shift"), kRequests * kChunks * kChunkTokens * 3 / 4);
  EXPECT_EQ(count(shift, "recomputed"), 0);
  EXPECT_GE(count(shift, "computed"), kRequests * kQuestion);
  EXPECT_EQ(shift["blend_probed_total"], 0);
  EXPECT_LT(shift["prefill_flops_over_off"].get<double>(), prefix["prefill_flops_over_off"].get<double>());

  // Blend finds the same spans, probes them and recomputes a share of them.
  const auto& blend = modes["blend"];
  EXPECT_EQ(count(blend, "prefix"), kRequests * kSystem);
  EXPECT_GT(count(blend, "recomputed"), count(shift, "recomputed"));
  EXPECT_EQ(count(blend, "shift") + count(blend, "recomputed"), count(shift, "shift"));
  EXPECT_GT(blend["blend_probed_total"].get<int>(), 0);
  EXPECT_GT(blend["prefill_flops_over_off"].get<double>(), shift["prefill_flops_over_off"].get<double>());
  EXPECT_DOUBLE_EQ(j["blend_over_off"].get<double>(), blend["over_off"].get<double>());
}

TEST(CliBenchRag, BlendRecomputingEverythingIsAColdRun) {
  const auto r = run_command(bench_rag(" --blend-ratio 1 -o json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["blend_ratio"], "1");
  const auto& blend = j["modes"]["blend"];
  EXPECT_EQ(count(blend, "shift"), 0);
  EXPECT_GT(count(blend, "recomputed"), 0);
  EXPECT_EQ(blend["greedy_agree_with_off"], kRequests * kAgree);
}

TEST(CliBenchRag, MarkdownNamesEveryModeAndTheTarget) {
  const auto r = run_command(bench_rag(""));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* row : {"| off |", "| prefix |", "| shift |", "| blend |", "blend / off =", "target ≤ 0.35"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << " missing from\n" << r.out;
}

TEST(CliBenchRag, RejectsMoreChunksThanThePoolHolds) {
  const auto r = run_command(bench_rag("", kChunks - 1));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--pool"), std::string::npos) << r.err;
}

TEST(CliBenchRag, RejectsABadBlendRatio) {
  const auto r = run_command(bench_rag(" --blend-ratio 2"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--blend-ratio"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
