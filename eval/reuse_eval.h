// `clmcache eval reuse`: how much an approximate reuse mode changes what the
// model predicts. For each case the cache starts empty; the reference is a
// full recompute (reuse off) of the asked prompt; each variant (a reuse mode,
// and for shift a lead) first runs the case's warm prompts, then the same
// prompt. Compared over a teacher-forced continuation: KL(full || reuse) of
// the next-token distributions and top-1 agreement; also the common prefix
// of greedy continuations, where each prompt token's K/V came from, the
// share of unchanged tokens reused and the share of prefill FLOPs spent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cache/kv_pool.h"
#include "cache/reuse_plan.h"
#include "engine/engine_options.h"
#include "distribution_metrics.h"
#include "reuse_cases.h"
#include "util/error.h"

namespace clm {

// One way of running the asked prompt.
struct ReuseVariant {
  ReuseMode mode = ReuseMode::Prefix;
  int lead = 0;       // only meaningful for shift and blend
  BlendChoice blend;  // only meaningful for blend
  std::string name() const;
};

struct ReuseEvalOptions {
  // The model, threads, KV types, block size and the reuse settings every
  // variant shares (min_reuse_tokens, blend_layer, block_strategy); the
  // evaluation sets the context, the pool and each variant's mode and lead.
  EngineOptions engine;
  std::vector<ReuseMode> modes = {ReuseMode::Off, ReuseMode::Prefix, ReuseMode::Shift};
  std::vector<int> leads;  // one shift variant per lead; empty: the engine's default lead
  // One blend variant per (lead, share); empty shares: the engine's default.
  std::vector<int> blend_leads = {0};
  std::vector<BlendChoice> blend_ratios;
  int greedy_tokens = 32;  // greedy continuation length, and the reference when a case has none
  int n_ctx = 0;           // 0: the model's training context
  // Called after each case (index, total), e.g. for progress on stderr.
  std::function<void(std::size_t, std::size_t)> on_case;
};

// One variant on one case.
struct ReuseVariantCase {
  int positions = 0;     // teacher-forced positions (the continuation's length)
  int missing = 0;       // of those, without a distribution: the predecessor's row was reused
  int top1_agree = 0;    // scored positions whose most likely token matches the reference's
  KlSummary kl;          // over the scored positions
  int greedy_match = 0;  // leading greedy tokens equal to the full recompute's
  ReuseCounts counts;    // of the asked prompt (greedy request)
  int computed_rows = 0;       // rows the asked prompt computed, per its prompt logprobs
  int unchanged_reused = 0;    // unchanged tokens not computed
  double flops = 0.0;          // prefill FLOPs of the asked prompt, blend's probes included
  int probed = 0;              // tokens blend probed
};

struct ReuseCaseResult {
  std::string id;
  std::string note;
  std::vector<int> warm_tokens;  // per warm prompt, BOS included
  int ask_tokens = 0;
  int continuation_tokens = 0;  // teacher-forced
  int greedy_tokens = 0;        // of the full recompute's greedy continuation
  int unchanged_tokens = 0;  // ask tokens a cache of the warm prompts could supply (token_overlap.h)
  double full_flops = 0.0;   // prefill FLOPs of the asked prompt computed in full
  std::vector<ReuseVariantCase> variants;  // parallel to ReuseEvalResult::variants
};

// One variant over all cases.
struct ReuseVariantSummary {
  int cases = 0;
  int positions = 0;
  int missing = 0;
  int top1_agree = 0;
  KlSummary kl;
  std::string worst_case;  // the case with the largest KL
  long greedy_match = 0;
  long greedy_total = 0;
  int greedy_exact_cases = 0;  // cases whose whole greedy continuation matched
  ReuseCounts counts;
  long unchanged = 0;
  long unchanged_reused = 0;
  int count_mismatches = 0;  // cases whose computed rows disagree with counts.computed + recomputed
  double flops = 0.0;
  double full_flops = 0.0;
  long probed = 0;
  // Linear FLOPs as a share of a full prefill had the model 32 layers of
  // this shape: a probe then costs probe_layer / 32 of a token and that
  // layer's V projection, which is where blend's first pass gets cheap.
  double linear_share_32 = 0.0;

  int scored() const { return positions - missing; }
  double top1() const { return scored() == 0 ? 0.0 : static_cast<double>(top1_agree) / scored(); }
  double unchanged_reused_share() const {
    return unchanged == 0 ? 0.0 : static_cast<double>(unchanged_reused) / static_cast<double>(unchanged);
  }
  double flops_share() const { return full_flops == 0.0 ? 0.0 : flops / full_flops; }
};

struct ReuseEvalResult {
  std::string model;
  std::string case_set;
  std::string case_set_description;
  std::string kv_type;
  int n_vocab = 0;
  int n_ctx = 0;
  int block_size = 0;
  int min_reuse_tokens = 0;
  int greedy_tokens = 0;
  std::vector<ReuseVariant> variants;
  std::vector<ReuseCaseResult> cases;
  std::vector<ReuseVariantSummary> summary;  // parallel to variants
};

// The variants the options ask for, in order: off, prefix, then shift per lead.
std::vector<ReuseVariant> reuse_variants(const ReuseEvalOptions& options);

// Fails before running anything when a case does not fit the context.
Result<ReuseEvalResult> run_reuse_eval(const ReuseEvalOptions& options, const ReuseCaseSet& cases);

// Adds one case's figures to a variant's summary.
// probe_cost_32: one probe's linear arithmetic as a share of a token's in a
// 32-layer model of this shape, (probe layer + V share of a layer) / 32.
void accumulate(ReuseVariantSummary& summary, const ReuseCaseResult& c, const ReuseVariantCase& v,
                double probe_cost_32);

}  // namespace clm
