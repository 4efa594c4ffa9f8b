// The server's Prometheus metrics, named clmcache_* (plus the few vLLM names
// routers read, vllm_metrics.h): requests by endpoint
// and status, token counters (prompt tokens also by where their K/V came
// from), latency and time-to-first-token histograms, and KV cache and
// scheduler figures refreshed from a stats snapshot at scrape time.
#pragma once

#include <string>

#include "app/metrics_registry.h"
#include "cache/cache_stats.h"
#include "cache/reuse_plan.h"
#include "engine/engine.h"

namespace clm {

class ServerMetrics {
 public:
  ServerMetrics();

  void record_request(const std::string& endpoint, int status);
  // One finished generation; ttft_s < 0 when no token was produced.
  void record_generation(const std::string& endpoint, int prompt_tokens, int cached_tokens, const ReuseCounts& reuse,
                         int generated_tokens, double latency_s, double ttft_s);
  void update_cache(const CacheStats& stats);
  void update_scheduler(const SchedulerStats& s);
  void update_tiers(const TierStats& s);

  std::string render() const { return registry_.render(); }
  const MetricsRegistry& registry() const { return registry_; }

 private:
  MetricsRegistry registry_;
};

}  // namespace clm
