#include "app/vllm_metrics.h"

namespace clm {

void define_vllm_metrics(MetricsRegistry& r) {
  r.define_gauge("vllm:num_requests_running", "generations decoding now (as clmcache_requests_running)");
  r.define_gauge("vllm:num_requests_waiting", "generations waiting to be admitted (as clmcache_requests_queued)");
  r.define_gauge("vllm:kv_cache_usage_perc",
                 "fraction of KV blocks held by live requests, 0 to 1 (idle cached blocks count as free, as in vLLM)");
  // Prometheus clients expose a counter named x as x_total; vLLM's are
  // scraped under these names.
  r.define_counter("vllm:prefix_cache_queries_total", "prompt tokens looked up in the prefix cache");
  r.define_counter("vllm:prefix_cache_hits_total", "of those, tokens found cached (exact prefix)");
}

void update_vllm_cache_metrics(MetricsRegistry& r, const CacheStats& s) {
  // vLLM's usage is 1 - free/total where free includes evictable cached
  // blocks: only blocks a live request references are "in use".
  const double usage =
      s.blocks_total == 0 ? 0.0 : static_cast<double>(s.blocks_used) / static_cast<double>(s.blocks_total);
  r.set("vllm:kv_cache_usage_perc", {}, usage);
  r.set_counter("vllm:prefix_cache_queries_total", {}, static_cast<double>(s.prompt_tokens));
  r.set_counter("vllm:prefix_cache_hits_total", {}, static_cast<double>(s.reused_tokens));
}

void update_vllm_scheduler_metrics(MetricsRegistry& r, const SchedulerStats& s) {
  r.set("vllm:num_requests_running", {}, s.running);
  r.set("vllm:num_requests_waiting", {}, s.queued);
}

}  // namespace clm
