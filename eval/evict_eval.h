// `clmcache eval evict`: what forgetting part of a long prompt costs the
// model's predictions. For each case the prompt (the text's first tokens) is
// prefilled in chunks; between chunks the eviction policy (engine/
// evict_policy.h) sees the attention statistics of the chunk and forgets
// blocks until the sequence is within its budget: forgotten slots leave the
// sequence's view, so later queries do not attend to them, and every other
// token keeps its position (no re-rotation) -- or, with compact positions,
// the kept tokens move to contiguous positions (their K re-rotated by the
// RoPE shift kernel) and later tokens continue from there. Then the text's next tokens are
// teacher-forced, and their negative log-likelihood is compared with that of
// the same run on the full cache: ΔNLL per token (mean over cases, with the
// standard error across cases) and top-1 agreement with the full cache.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/evict_policy.h"
#include "evict_cases.h"
#include "kernels/kv_geometry.h"
#include "util/error.h"

namespace clm {

struct EvictEvalOptions {
  std::string model_path;
  std::vector<EvictKind> policies = {EvictKind::Window, EvictKind::SinksWindow, EvictKind::H2O,
                                     EvictKind::Attention};
  std::vector<double> budgets = {0.5, 0.25};  // shares of the prompt's tokens kept
  int prompt_tokens = 448;                    // BOS included
  int continuation_tokens = 16;               // teacher-forced after the prompt
  int chunk_tokens = 64;                      // prefill chunk; the policy runs between chunks
  EvictOptions policy;                        // every setting but the kind, shared by all policies
  KvTypes kv_types;
  // After each eviction, close the gaps: kept tokens renumbered 0, 1, ...
  // (K re-rotated), later tokens numbered after them. False: positions kept.
  bool compact_positions = false;
  int n_threads = 0;  // 0: all hardware threads
  // Called after each case (index, total), e.g. for progress on stderr.
  std::function<void(std::size_t, std::size_t)> on_case;
};

// One policy at one budget over all cases.
struct EvictVariantResult {
  EvictKind kind = EvictKind::Attention;
  double budget = 0.0;
  std::vector<double> case_delta_nll;  // per case: mean ΔNLL per continuation token
  int positions = 0;                   // scored continuation tokens, all cases
  int top1_agree = 0;                  // of those, the most likely token equals the full cache's
  double kept_share = 0.0;             // mean share of the prompt still attended when scoring
  double delta_nll_mean() const;
  double delta_nll_stderr() const;  // across cases
  double top1_agreement() const { return positions == 0 ? 0.0 : static_cast<double>(top1_agree) / positions; }
};

struct EvictEvalResult {
  std::string case_set;
  int cases = 0;
  int prompt_tokens = 0;
  int continuation_tokens = 0;
  double full_nll = 0.0;  // mean NLL per continuation token on the full cache
  EvictOptions policy;
  bool compact_positions = false;
  std::vector<EvictVariantResult> variants;  // policies x budgets, in option order
};

Result<EvictEvalResult> run_evict_eval(const EvictEvalOptions& options, const EvictCaseSet& cases);

// The results as a Markdown table with the settings above it.
std::string evict_markdown(const EvictEvalResult& r);

}  // namespace clm
