// `clmcache bench reuse`: what non-prefix reuse buys when a cached
// conversation comes back changed (its start edited, text inserted in the
// middle, its start deleted): time to first token with reuse off, prefix and
// shift, each from a cache holding only the original conversation, the modes
// alternated within each repetition; where each prompt token's K/V came
// from; and whether the first greedy tokens agree with a full recompute.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_options.h"
#include "bench_stats.h"
#include "cache/reuse_plan.h"
#include "util/error.h"

namespace clm {

struct ReuseBenchOptions {
  // The model, threads, KV block size and batch size (clmcache bench's
  // shared flags); the benchmark sets the rest of the engine itself.
  EngineOptions engine;
  int prompt_tokens = 2000;  // the cached conversation, BOS included
  int edit_tokens = 100;     // tokens replaced, inserted or deleted
  int repetitions = 5;
  int reuse_lead = ReuseOptions{}.lead;  // of shift mode
  int agree_tokens = 8;      // greedy tokens generated and compared with mode off
};

inline constexpr std::array<ReuseMode, 3> kBenchReuseModes = {ReuseMode::Off, ReuseMode::Prefix, ReuseMode::Shift};

struct ReuseModeRuns {
  ReuseMode mode = ReuseMode::Off;
  Summary ttft_s;
  ReuseCounts reuse;             // the same in every repetition (checked)
  std::vector<int32_t> greedy;   // the first agree_tokens generated, first repetition
  int agree_with_off = 0;        // leading greedy tokens equal to mode off's
};

struct ReuseScenarioResult {
  std::string name;  // edit, insert, delete
  int prompt_tokens = 0;
  std::array<ReuseModeRuns, kBenchReuseModes.size()> modes;  // in kBenchReuseModes order

  const ReuseModeRuns& mode(ReuseMode m) const;
  double ratio_to_off(ReuseMode m) const;  // median TTFT over mode off's
};

struct ReuseBenchResult {
  std::string model;
  int n_threads = 0;
  int insert_at = 0;
  std::vector<ReuseScenarioResult> scenarios;
};

Result<ReuseBenchResult> run_reuse_bench(const ReuseBenchOptions& options);
nlohmann::json to_json(const ReuseBenchOptions& options, const ReuseBenchResult& result);
std::string to_markdown(const ReuseBenchOptions& options, const ReuseBenchResult& result);

// Writes the benchmark's prompts as token ids ({"base", "edit", "insert",
// "delete"}), for replaying them against another engine.
Status dump_reuse_prompts(const ReuseBenchOptions& options, const std::string& path);

}  // namespace clm
