// `clmcache bench model`: prompt processing (pp) and token generation (tg)
// speed of one model, measured like llama-bench: pp = one prompt of p tokens
// in one forward call, tg = n single-token decode steps, both after d tokens
// already in the cache (the depth, llama-bench's -d; 0: an empty cache),
// which are computed before each run and not timed; each repeated r times
// after a warm-up.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "kernels/kv_type.h"
#include "util/error.h"

namespace clm {

struct ModelBenchOptions {
  std::string model_path;
  int n_prompt = 512;
  int n_gen = 128;
  int depth = 0;  // tokens in the cache before each pp or tg run, not timed
  int n_threads = 0;  // 0: all hardware threads
  int repetitions = 5;
  KvTypes kv_types;  // K and V element types
  bool mmap = false;  // weights from the file map in place instead of a private copy
};

struct ModelBenchResult {
  std::string model;
  std::string kernel_path;
  int n_threads = 0;
  uint64_t weight_bytes = 0;
  uint64_t parameters = 0;
  Summary pp_tokens_per_s;  // empty (n == 0) when n_prompt == 0
  Summary tg_tokens_per_s;  // empty when n_gen == 0
};

Result<ModelBenchResult> run_model_bench(const ModelBenchOptions& options);
nlohmann::json to_json(const ModelBenchOptions& options, const ModelBenchResult& result);
std::string to_markdown(const ModelBenchOptions& options, const ModelBenchResult& result);

}  // namespace clm
