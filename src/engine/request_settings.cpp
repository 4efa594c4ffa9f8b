#include "engine/request_settings.h"

namespace clm {

ResolvedRequestSettings resolve_request_settings(const SchedulerOptions& defaults, const RequestOverrides& overrides) {
  ResolvedRequestSettings s;
  s.reuse = defaults.reuse;
  if (overrides.reuse) s.reuse.mode = *overrides.reuse;
  if (overrides.blend) {
    s.reuse.blend_ratio = overrides.blend->ratio;
    s.reuse.blend_adaptive = overrides.blend->adaptive;
  }
  if (overrides.block_strategy) s.reuse.block_strategy = *overrides.block_strategy;
  s.kv_budget_tokens = overrides.kv_budget_tokens.value_or(defaults.kv_budget_tokens);
  s.evict_positions = overrides.evict_positions.value_or(defaults.evict_positions);
  return s;
}

}  // namespace clm
