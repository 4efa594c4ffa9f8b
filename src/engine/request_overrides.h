// RequestOverrides: the server's defaults (SchedulerOptions) that one
// request may replace for itself alone. They travel as one struct, from the
// OpenAI request through GenerationRequest and RequestOptions to the
// scheduler, so that a new override is one field here and one line in
// resolve_request_settings (engine/request_settings.h) rather than a copy at
// every hop and a value_or at every place that reads it.
#pragma once

#include <optional>

#include "cache/reuse_plan.h"
#include "engine/kv_budget.h"

namespace clm {

// Each field left empty keeps the default.
struct RequestOverrides {
  // Overrides SchedulerOptions::reuse.mode.
  std::optional<ReuseMode> reuse;
  // Overrides SchedulerOptions::reuse's blend share and adaptive choice.
  std::optional<BlendChoice> blend;
  // Overrides SchedulerOptions::reuse.block_strategy.
  std::optional<BlockStrategy> block_strategy;
  // Overrides SchedulerOptions::kv_budget_tokens (0: none).
  std::optional<int> kv_budget_tokens;
  // Overrides SchedulerOptions::evict_positions.
  std::optional<EvictPositions> evict_positions;
};

}  // namespace clm
