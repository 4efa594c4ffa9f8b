// The storage tiers' figures as /stats reports them (the "tiers" object) and
// as /metrics exposes them (clmcache_tier_*, clmcache_redis_breaker_state).
#pragma once

#include <nlohmann/json.hpp>

#include "app/metrics_registry.h"
#include "tier/tier_set.h"

namespace clm {

nlohmann::json tiers_json(const TierStats& stats);

void define_tier_metrics(MetricsRegistry& registry);
void update_tier_metrics(MetricsRegistry& registry, const TierStats& stats);

}  // namespace clm
