#include "app/server_metrics.h"

#include <utility>

#include "app/tier_report.h"
#include "app/vllm_metrics.h"

namespace clm {

ServerMetrics::ServerMetrics() {
  auto& r = registry_;
  r.define_counter("clmcache_requests_total", "HTTP requests answered, by endpoint and status code");
  r.define_counter("clmcache_prompt_tokens_total", "prompt tokens of finished generations");
  r.define_counter("clmcache_cached_tokens_total",
                   "prompt tokens reused from the KV cache instead of computed (exact prefix plus shifted spans)");
  r.define_counter("clmcache_prompt_tokens_by_reuse_total",
                   "prompt tokens of finished generations by where their K/V came from: prefix (exact), shift "
                   "(copied from a span elsewhere, K re-rotated), recomputed (found but computed), computed");
  r.define_counter("clmcache_generated_tokens_total", "tokens generated");
  // Latencies of a small CPU model range from milliseconds to minutes.
  const std::vector<double> seconds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  r.define_histogram("clmcache_request_duration_seconds", "time from request to the last token, by endpoint", seconds);
  r.define_histogram("clmcache_time_to_first_token_seconds", "time from request to the first generated token",
                     seconds);
  r.define_gauge("clmcache_kv_blocks", "KV cache blocks by state: used (live sequences), cached (idle, reusable), free");
  r.define_gauge("clmcache_kv_block_hit_rate", "share of looked-up prompt blocks found resident");
  r.define_gauge("clmcache_kv_token_hit_rate", "share of prompt tokens attached from the prefix cache");
  r.define_gauge("clmcache_kv_reuse_rate", "share of prompt tokens not computed: exact prefix plus shifted spans");
  r.define_gauge("clmcache_avg_reuse_depth", "prompt tokens reused (exact prefix plus shifted spans) per sequence");
  r.define_counter("clmcache_kv_spans_reused_total", "spans copied from elsewhere in the cache (reuse modes shift and blend)");
  r.define_counter("clmcache_kv_plans_stale_total", "reuse plans whose source was evicted before they were applied");
  r.define_gauge("clmcache_kv_memory_used_bytes", "bytes of KV blocks in use or cached");
  r.define_gauge("clmcache_kv_memory_capacity_bytes", "bytes of the whole KV pool");
  r.define_gauge("clmcache_requests_running", "generations decoding now");
  r.define_gauge("clmcache_requests_queued", "generations waiting for KV memory");
  r.define_counter("clmcache_requests_cancelled_total",
                   "generations cancelled, queued or running, by cause: client_gone, stop_string, shutdown, deadline");
  r.define_counter("clmcache_requests_preempted_total",
                   "running generations ended early to make room, by cause: kv_cache_full");
  r.define_counter("clmcache_blend_probed_tokens_total",
                   "prompt tokens run through blend's first pass (layer 0 and the next layer's K/V projections)");
  r.define_counter("clmcache_blend_recomputed_tokens_total", "copied prompt tokens blend chose to recompute");
  r.define_counter("clmcache_prefill_flops_total", "arithmetic finished requests' prompts cost, blend probes included");
  r.define_gauge("clmcache_session_pinned_sessions", "sessions whose last turn is pinned in RAM");
  r.define_gauge("clmcache_session_pinned_blocks", "distinct KV blocks pinned by sessions (not evictable)");
  r.define_counter("clmcache_session_pins_expired_total", "session pins dropped at --session-timeout");
  r.define_counter("clmcache_session_pins_released_total",
                   "session pins given up for room: the --session-pin-max-share bound, or a request needing it");
  r.define_counter("clmcache_kv_evicted_blocks_total",
                   "KV blocks live sequences forgot under their KV budget, by reason: budget (the sequence outgrew "
                   "it), pressure (the pool was short for admission or growth)");
  r.define_counter("clmcache_kv_evicted_tokens_total", "K/V slots live sequences forgot under their KV budget");
  r.define_gauge("clmcache_kv_evict_candidates", "blocks of running budgeted sequences queued as eviction candidates");
  r.define_gauge("clmcache_kv_evict_protected_blocks", "blocks of running budgeted sequences a protect rule keeps");
  r.define_gauge("clmcache_kv_sequences_over_budget",
                 "running sequences holding more than their KV budget (only blocks the policy never evicts are left)");
  define_tier_metrics(r);
  define_vllm_metrics(r);
}

void ServerMetrics::record_request(const std::string& endpoint, int status) {
  registry_.add("clmcache_requests_total", {{"endpoint", endpoint}, {"status", std::to_string(status)}});
}

void ServerMetrics::record_generation(const std::string& endpoint, int prompt_tokens, int cached_tokens,
                                      const ReuseCounts& reuse, int generated_tokens, double latency_s,
                                      double ttft_s) {
  registry_.add("clmcache_prompt_tokens_total", {}, prompt_tokens);
  registry_.add("clmcache_cached_tokens_total", {}, cached_tokens);
  const std::pair<const char*, int> kinds[] = {
      {"prefix", reuse.prefix}, {"shift", reuse.shift}, {"recomputed", reuse.recomputed}, {"computed", reuse.computed}};
  for (const auto& [kind, n] : kinds) registry_.add("clmcache_prompt_tokens_by_reuse_total", {{"kind", kind}}, n);
  registry_.add("clmcache_generated_tokens_total", {}, generated_tokens);
  registry_.observe("clmcache_request_duration_seconds", {{"endpoint", endpoint}}, latency_s);
  if (ttft_s >= 0) registry_.observe("clmcache_time_to_first_token_seconds", {}, ttft_s);
}

void ServerMetrics::update_cache(const CacheStats& s) {
  registry_.set("clmcache_kv_blocks", {{"state", "used"}}, static_cast<double>(s.blocks_used));
  registry_.set("clmcache_kv_blocks", {{"state", "cached"}}, static_cast<double>(s.blocks_cached));
  registry_.set("clmcache_kv_blocks", {{"state", "free"}}, static_cast<double>(s.blocks_free));
  registry_.set("clmcache_kv_block_hit_rate", {}, s.block_hit_rate());
  registry_.set("clmcache_kv_token_hit_rate", {}, s.token_hit_rate());
  registry_.set("clmcache_avg_reuse_depth", {}, s.avg_reuse_depth());
  registry_.set("clmcache_kv_reuse_rate", {}, s.reuse_rate());
  registry_.set_counter("clmcache_kv_spans_reused_total", {}, static_cast<double>(s.spans_reused));
  registry_.set_counter("clmcache_kv_plans_stale_total", {}, static_cast<double>(s.plans_stale));
  registry_.set("clmcache_kv_memory_used_bytes", {}, static_cast<double>((s.blocks_used + s.blocks_cached) * s.block_bytes));
  registry_.set("clmcache_kv_memory_capacity_bytes", {}, static_cast<double>(s.blocks_total * s.block_bytes));
  update_vllm_cache_metrics(registry_, s);
}

void ServerMetrics::update_scheduler(const SchedulerStats& s) {
  registry_.set("clmcache_requests_running", {}, s.running);
  registry_.set("clmcache_requests_queued", {}, s.queued);
  registry_.set_counter("clmcache_blend_probed_tokens_total", {}, static_cast<double>(s.blend_probed_tokens));
  registry_.set_counter("clmcache_blend_recomputed_tokens_total", {}, static_cast<double>(s.blend_recomputed_tokens));
  registry_.set_counter("clmcache_prefill_flops_total", {}, s.prefill_flops);
  registry_.set_counter("clmcache_kv_evicted_blocks_total", {{"reason", "budget"}},
                        static_cast<double>(s.evicted_blocks_budget));
  registry_.set_counter("clmcache_kv_evicted_blocks_total", {{"reason", "pressure"}},
                        static_cast<double>(s.evicted_blocks_pressure));
  registry_.set_counter("clmcache_kv_evicted_tokens_total", {}, static_cast<double>(s.evicted_tokens));
  registry_.set("clmcache_kv_evict_candidates", {}, s.evict_candidates);
  registry_.set("clmcache_kv_evict_protected_blocks", {}, s.evict_protected_blocks);
  registry_.set("clmcache_kv_sequences_over_budget", {}, s.sequences_over_budget);
  for (std::size_t i = 0; i < kCancelCauses; ++i)
    registry_.set_counter("clmcache_requests_cancelled_total",
                          {{"cause", std::string(to_string(static_cast<CancelCause>(i)))}},
                          static_cast<double>(s.cancelled_by[i]));
  for (std::size_t i = 0; i < kPreemptCauses; ++i)
    registry_.set_counter("clmcache_requests_preempted_total",
                          {{"cause", std::string(to_string(static_cast<PreemptCause>(i)))}},
                          static_cast<double>(s.preempted_by[i]));
  registry_.set("clmcache_session_pinned_sessions", {}, static_cast<double>(s.session_pins.sessions));
  registry_.set("clmcache_session_pinned_blocks", {}, static_cast<double>(s.session_pins.blocks));
  registry_.set_counter("clmcache_session_pins_expired_total", {}, static_cast<double>(s.session_pins.expired));
  registry_.set_counter("clmcache_session_pins_released_total", {},
                        static_cast<double>(s.session_pins.released_for_room));
  update_vllm_scheduler_metrics(registry_, s);
}

void ServerMetrics::update_tiers(const TierStats& s) { update_tier_metrics(registry_, s); }

}  // namespace clm
