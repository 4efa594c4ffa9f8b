// `clmcache bench rag`: retrieval-augmented prompts. A pool of document
// chunks is computed once, each chunk on its own at positions 0..C-1 (as a
// RAG server precomputes its documents), and the system prompt once; then
// each request puts K chunks drawn from the pool, shuffled, between the
// system prompt and a question. Measured per reuse mode (off, prefix, shift,
// blend), each from the same cache contents, the modes alternated within
// each repetition: time to first token, where each prompt token's K/V came
// from, what blend probed, the prefill arithmetic, and whether the first
// greedy tokens agree with a full recompute.
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

struct RagBenchOptions {
  // The model, threads, KV block size and batch size (clmcache bench's
  // shared flags); the benchmark sets the rest of the engine itself.
  EngineOptions engine;
  int system_tokens = 100;   // BOS included
  int chunks = 6;            // K, drawn per request
  int chunk_tokens = 300;    // C
  int pool = 20;             // P, computed before the requests
  int question_tokens = 32;
  int repetitions = 8;       // R requests, each run in every mode
  // The lead of shift's and blend's spans. 0: a chunk's K/V is copied whole,
  // so shift shows the pure cost of copying and blend's recomputed tokens
  // are exactly its own picks (eval reuse found blend needs no lead).
  int reuse_lead = 0;
  BlendChoice blend;         // the engine's default share
  int agree_tokens = 8;      // greedy tokens generated and compared with mode off
  uint32_t seed = 1;         // of the chunk draws
};

inline constexpr std::array<ReuseMode, 4> kRagModes = {ReuseMode::Off, ReuseMode::Prefix, ReuseMode::Shift,
                                                       ReuseMode::Blend};

struct RagModeRuns {
  ReuseMode mode = ReuseMode::Off;
  Summary ttft_s;
  double ttft_p90_s = 0.0;
  ReuseCounts reuse;           // summed over the R requests
  long long blend_probed = 0;  // summed over the R requests
  double prefill_flops = 0.0;  // summed over the R requests
  int first_token_agree = 0;   // requests whose first greedy token is mode off's
  int greedy_agree = 0;        // leading greedy tokens equal to mode off's, summed
};

struct RagBenchResult {
  std::string model;
  int n_threads = 0;
  int prompt_tokens = 0;             // of every request
  int warm_tokens = 0;               // system prompt and pool, computed before each request
  std::vector<std::vector<int>> drawn;  // per request, the pool indices in prompt order
  std::array<RagModeRuns, kRagModes.size()> modes;  // in kRagModes order

  const RagModeRuns& mode(ReuseMode m) const;
  double ratio_to_off(ReuseMode m) const;  // median TTFT over mode off's
  double flops_share(ReuseMode m) const;   // prefill FLOPs over mode off's
};

Result<RagBenchResult> run_rag_bench(const RagBenchOptions& options);
nlohmann::json to_json(const RagBenchOptions& options, const RagBenchResult& result);
std::string to_markdown(const RagBenchOptions& options, const RagBenchResult& result);

}  // namespace clm
