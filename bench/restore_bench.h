// `clmcache bench restore`: what the tiers below RAM buy after a restart and
// across servers (DESIGN.md "Tiers and persistence").
// (a) Disk: one engine computes a prefix with a disk cache and goes away;
//     a fresh engine on the same directory answers prefix + suffix
//     (restoring the prefix's blocks from disk), and a fresh engine without
//     tiers answers it cold. Time to first token of each, alternated.
// (b) Redis: another process (this binary, run again) computes the prefix
//     into a private redis-server and exits; a fresh engine here on the same
//     Redis answers prefix + suffix, and a cold engine answers it too.
//     Skipped, saying why, when redis-server is not installed.
// Each pair also compares the first greedy tokens with the cold run's.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine_options.h"
#include "bench_stats.h"
#include "util/error.h"

namespace clm {

struct RestoreBenchOptions {
  // The model, threads, KV block size and batch size (clmcache bench's
  // shared flags); the benchmark sets the rest of the engine itself.
  EngineOptions engine;
  std::string self_exe;       // this program, run again as the other server of part (b)
  int prefix_tokens = 2000;   // computed by the first engine, BOS included
  int suffix_tokens = 8;      // the new request adds these
  int repetitions = 3;
  int agree_tokens = 4;       // greedy tokens compared with the cold run
  bool redis = true;          // part (b)
};

// One side-by-side comparison: a warm (restored) engine against a cold one.
struct RestorePair {
  Summary warm_ttft_s;
  Summary cold_ttft_s;
  int restored_tokens = 0;   // prompt tokens whose K/V came from the tier (first repetition)
  int agree_with_cold = 0;   // leading greedy tokens equal to the cold run's
  double ratio() const { return cold_ttft_s.median > 0 ? warm_ttft_s.median / cold_ttft_s.median : 0.0; }
};

struct RestoreBenchResult {
  std::string model;
  int n_threads = 0;
  int prompt_tokens = 0;
  RestorePair disk;
  std::optional<RestorePair> redis;
  std::string redis_skipped;  // why part (b) did not run; empty when it did
};

inline constexpr double kDiskRestoreTarget = 0.1;   // restore <= 0.1 x recompute
inline constexpr double kRedisShareTarget = 0.2;    // second server's TTFT <= 0.2 x cold

Result<RestoreBenchResult> run_restore_bench(const RestoreBenchOptions& options);
// The other server of part (b): computes the prefix into Redis at url.
Status run_restore_writer(const RestoreBenchOptions& options, const std::string& redis_url);

nlohmann::json to_json(const RestoreBenchOptions& options, const RestoreBenchResult& result);
std::string to_markdown(const RestoreBenchOptions& options, const RestoreBenchResult& result);

}  // namespace clm
