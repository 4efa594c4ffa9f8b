// One request inside the scheduler: what it asked for, what the cache gave
// it, and where its prefill, blend passes, budget and generation stand.
// Private to the scheduler's translation units.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/kv_budget.h"
#include "engine/request_settings.h"
#include "engine/scheduler.h"

namespace clm {

struct Scheduler::Sequence {
  Sequence(RequestId id_in, Request req, TokenCallback tok, DoneCallback done, int block_size)
      : id(id_in),
        request(std::move(req)),
        on_token(std::move(tok)),
        on_done(std::move(done)),
        kv(block_size),
        sampler(request.sampler),
        history(request.prompt),
        n_prompt(static_cast<int>(request.prompt.size())) {}

  RequestId id;
  Request request;
  // The request's overrides applied to the scheduler's defaults, once, at
  // submit: admission and the budget read these, never the raw overrides.
  ResolvedRequestSettings settings;
  TokenCallback on_token;
  DoneCallback on_done;
  CachedSequence kv;
  Sampler sampler;
  std::vector<int32_t> history;  // prompt + generated tokens, for the penalties
  PromptLabels labels;           // the splitter's, for the cache's type guard
  int n_prompt;
  int max_new = 0;        // max_tokens, bounded by the room left in n_ctx
  ReuseCounts reuse;      // from the plan applied at admission
  ReuseMap reuse_map;     // the same, token by token
  // Prompt ranges left to compute, from the plan; `compute_at` is the next
  // position inside compute[compute_range].
  std::vector<PromptRange> compute;
  std::size_t compute_range = 0;
  int32_t compute_at = 0;
  // Blend's first pass: every prompt token of probe_region runs as a probe
  // (model/batch.h), which also fills the layer-0 K/V of the tokens still to
  // compute there; the copied ones (`copied`) are measured. Once the pass is
  // complete the most deviant copied tokens join `compute`, and only then
  // does the second pass (plain computing) begin.
  PromptRange probe_region;
  int32_t probe_at = 0;
  bool blend_selected = false;
  std::vector<PromptRange> copied;
  std::vector<float> deviation;  // per position of probe_region
  // Per position of probe_region, the residual its probe left at the probe
  // layer ([n][n_embd]): the second pass resumes its rows there instead of
  // computing the layers before again. Dropped once that pass is built.
  std::vector<float> probe_residual;
  float blend_ratio = 0.0f;
  bool blend_adaptive = false;
  int blend_probed = 0;
  double prefill_flops = 0.0;
  std::vector<std::optional<PromptLogprob>> prompt_logprobs;  // with Request::prompt_logprobs >= 0
  std::vector<LandedEntry> promoted;  // read from the tiers at submit, adopted before admission
  // With a KV budget the sequence can outgrow: what it forgets and why.
  std::optional<KvBudget> budget;
  bool unbounded = false;  // has a KV budget, so n_ctx does not bound it
  bool batched = false;    // has rows in the batch being built: its slots must not move
  int evicted_tokens() const { return budget ? budget->evicted_tokens() : 0; }
  int generated = 0;
  bool has_pending = false;  // `pending` was sampled and its K/V not computed yet
  int32_t pending = 0;
  bool finished = false;
  std::optional<CancelCause> cancel_cause;    // with finish(..., StopReason::Cancelled)
  std::optional<PreemptCause> preempt_cause;  // set when preempted
  std::chrono::steady_clock::time_point submitted, admitted, first_token;

  bool blend_pending() const { return probe_region.end > probe_region.begin && !blend_selected; }
  bool probing() const { return blend_pending() && probe_at < probe_region.end; }
  bool prefilling() const { return blend_pending() || compute_range < compute.size(); }
  // Slots from here on may still be rewritten: the whole probe region until
  // the recompute set is known, then whatever the second pass has not
  // reached (it computes in position order).
  int32_t final_limit() const {
    if (blend_pending()) return probe_region.begin;
    return compute_range < compute.size() ? compute_at : INT32_MAX;
  }
  // Whether the forward pass must return the logits of prompt row `pos`:
  // the last one is sampled from, the others score the next prompt token.
  bool wants_prompt_row(int32_t pos) const {
    if (pos == n_prompt - 1) return max_new > 0;
    return request.prompt_logprobs >= 0;
  }
  // Tokens the sequence must be able to hold at admission: the prompt and
  // the slot of the first generated token (unless n_ctx leaves none).
  // A sequence that forgets reserves its prompt's room chunk by chunk, at
  // most its budget at admission.
  int admission_tokens(int n_ctx) const {
    if (budget) return std::min(n_prompt + 1, budget->budget_tokens());
    return std::min(n_prompt + 1, unbounded ? INT32_MAX : n_ctx);
  }
};

}  // namespace clm
