// The handful of vLLM metric names that routers and the Gateway API
// inference extension's endpoint picker read from a model server, exported
// next to clmcache's own names with vLLM's meaning: queue depth, running
// generations, the share of KV blocks held by live requests (a fraction,
// 0..1), and prefix-cache lookups counted in tokens.
#pragma once

#include "app/metrics_registry.h"
#include "cache/cache_stats.h"
#include "engine/engine.h"

namespace clm {

void define_vllm_metrics(MetricsRegistry& r);
void update_vllm_cache_metrics(MetricsRegistry& r, const CacheStats& s);
void update_vllm_scheduler_metrics(MetricsRegistry& r, const SchedulerStats& s);

}  // namespace clm
