// Generator: the single-sequence generation loop. Reads the prompt in
// prefill chunks, then decodes one token per forward call, sampling each,
// until the token budget, an end-of-generation token, or the caller says stop.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cache/kv_pool.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct GenerateOptions {
  int max_tokens = 128;
  int prefill_chunk = 512;  // prompt tokens per forward call
  int top_logprobs = 0;     // report this many most likely tokens per step
  bool stop_at_end_of_generation = true;
  SamplerParams sampler;
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0.0f;  // of the chosen token under the raw distribution
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double time_to_first_token_s = 0.0;
  double prefill_s = 0.0;
  double decode_s = 0.0;
  std::string stop_reason;  // "stop" (end token), "length", "cancelled"
};

class Generator {
 public:
  Generator(Model& model, KvPool& pool, ThreadPool& threads) : model_(model), pool_(pool), threads_(threads) {}

  // on_token is called for each generated token; returning false stops.
  Result<GenerationStats> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const std::function<bool(const GeneratedToken&)>& on_token);

 private:
  Model& model_;
  KvPool& pool_;
  ThreadPool& threads_;
};

}  // namespace clm
