// What a request is and what comes back from it, apart from the scheduler
// that runs it: the options a caller fills (one struct for the CLI, the
// server and the Python module), the tokens it streams and the summary it
// ends with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/reuse_map.h"
#include "cache/reuse_plan.h"
#include "engine/end_cause.h"
#include "engine/request_overrides.h"
#include "engine/stop_reason.h"
#include "model/sampler.h"

namespace clm {

using RequestId = uint64_t;

// What one request asks for besides its prompt; `overrides` replaces the
// server's defaults (SchedulerOptions) for this request alone. The CLI
// (Engine::generate), the server and the Python module fill this one struct.
struct RequestOptions {
  int max_tokens = 128;
  int top_logprobs = 0;
  bool stop_at_end_of_generation = true;
  SamplerParams sampler;
  uint64_t cache_namespace = 0;  // requests in different namespaces share no blocks
  // Reuse mode, blend share, block strategy, KV budget and eviction
  // positions, where this request differs from the defaults; read through
  // resolve_request_settings (engine/request_settings.h).
  RequestOverrides overrides;
  // -1: none. K >= 0: for every prompt position i >= 1 whose predecessor's
  // row is computed, the log-probability of prompt[i] and the K most likely
  // tokens there (RequestSummary::prompt_logprobs).
  int prompt_logprobs = -1;
  // With prompt_logprobs >= 0, K >= 0: every prompt position from K on is
  // scored, whatever the cache holds: the rows from K - 1 on are computed,
  // never reused (reuse applies before them as usual). -1: no such promise.
  int prompt_logprobs_from = -1;
  // Debugging and tests: each TokenEvent carries the full row of logits the
  // token was sampled from (before penalties). Costs a copy of n_vocab floats.
  bool record_logits = false;

  // The first prompt index whose K/V must be computed whatever the cache
  // holds (ReuseOptions::reuse_before); INT32_MAX when any may be reused.
  int32_t reuse_before() const {
    if (prompt_logprobs < 0 || prompt_logprobs_from < 0) return INT32_MAX;
    return std::max(prompt_logprobs_from - 1, 0);
  }
};

struct Request : RequestOptions {
  std::vector<int32_t> prompt;
};

struct TokenEvent {
  int32_t id = 0;
  float logprob = 0.0f;  // of the chosen token under the unpenalized distribution
  std::vector<std::pair<int32_t, float>> top_logprobs;
  std::vector<float> logits;  // only with Request::record_logits
};

// The distribution a prompt position was predicted with: the prompt token's
// log-probability and the K most likely tokens (most likely first).
struct PromptLogprob {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

struct RequestSummary {
  RequestId id = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;     // reused from the cache, not computed (reuse.prefix + reuse.shift)
  ReuseCounts reuse;         // where each prompt token's K/V came from
  // The same token by token, with the prompt tokens a KV budget forgot
  // later marked; empty when the request was never admitted.
  ReuseMap reuse_map;
  // With Request::prompt_logprobs >= 0: one entry per prompt token; entry 0
  // and the positions whose predecessor was reused rather than computed are
  // empty (none from Request::prompt_logprobs_from on).
  std::vector<std::optional<PromptLogprob>> prompt_logprobs;
  int blend_probed = 0;       // prompt tokens blend's first pass ran through its first layer(s)
  double prefill_flops = 0.0;  // arithmetic the prompt cost (model/prefill_flops.h), probes included
  int generated_tokens = 0;
  double queue_s = 0.0;      // submit to admission
  double time_to_first_token_s = 0.0;  // submit to first token
  double total_s = 0.0;
  StopReason stop_reason = StopReason::Stop;  // set when the request ends
  std::string error;         // set when stop_reason is Error
  std::string note;          // why a request ended early (e.g. preempted: KV cache full)
  std::optional<CancelCause> cancel_cause;    // set when stop_reason is Cancelled
  std::optional<PreemptCause> preempt_cause;  // set when the request was preempted
  int evicted_tokens = 0;    // K/V slots forgotten to stay within the KV budget or relieve the pool
};

}  // namespace clm
