// What one request runs with: the scheduler's defaults with the request's
// overrides applied. Every reader of a per-request setting (the scheduler's
// submit and admission, the server's context check) resolves it here, so
// they cannot disagree on which value wins.
#pragma once

#include "cache/reuse_plan.h"
#include "engine/kv_budget.h"
#include "engine/request_overrides.h"
#include "engine/scheduler_options.h"

namespace clm {

struct ResolvedRequestSettings {
  // The defaults' reuse options with mode, blend share, adaptive choice and
  // block strategy overridden; reuse_before is the defaults' (it follows
  // from the request's prompt scoring, RequestOptions::reuse_before).
  ReuseOptions reuse;
  int kv_budget_tokens = 0;  // 0: no budget
  EvictPositions evict_positions = EvictPositions::Keep;
};

// Applies the overrides as they are: range checks (a negative budget, a
// blend share outside [0, 1]) are the scheduler's, at submit.
ResolvedRequestSettings resolve_request_settings(const SchedulerOptions& defaults, const RequestOverrides& overrides);

}  // namespace clm
