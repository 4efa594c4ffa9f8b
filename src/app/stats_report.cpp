#include "app/stats_report.h"

#include <chrono>

#include "app/tier_report.h"
#include "util/float_decimal.h"

namespace clm {

namespace {

using nlohmann::json;

json cache_json(const CacheStats& s) {
  return {{"sequences", s.sequences},
          {"prompt_tokens", s.prompt_tokens},
          {"reused_tokens", s.reused_tokens},
          {"shifted_tokens", s.shifted_tokens},
          {"recomputed_tokens", s.recomputed_tokens},
          {"spans_reused", s.spans_reused},
          {"plans_stale", s.plans_stale},
          {"blocks_looked_up", s.blocks_looked_up},
          {"blocks_hit", s.blocks_hit},
          {"blocks_total", s.blocks_total},
          {"blocks_used", s.blocks_used},
          {"blocks_cached", s.blocks_cached},
          {"blocks_free", s.blocks_free},
          {"prefix_blocks", s.prefix_blocks},
          {"block_bytes", s.block_bytes},
          {"blocks_ever_cached", s.blocks_ever_cached},
          {"cached_blocks_hit", s.cached_blocks_hit},
          {"evictions_capacity", s.evictions_capacity},
          {"evictions_ttl", s.evictions_ttl},
          {"copy_on_write", s.copy_on_write},
          {"block_hit_rate", s.block_hit_rate()},
          {"token_hit_rate", s.token_hit_rate()},
          {"reuse_rate", s.reuse_rate()},
          {"avg_reuse_depth", s.avg_reuse_depth()},
          {"cache_efficiency_ratio", s.cache_efficiency_ratio()},
          {"memory_used_mb", s.memory_used_mb()}};
}

// The reuse the server applies to requests that do not say (after
// --no-prefix-cache), and the span search's limits.
json reuse_options_json(const ReuseOptions& r) {
  return {{"mode", std::string(to_string(r.mode))},
          {"min_reuse_tokens", r.min_reuse_tokens},
          {"window", r.window},
          {"lead", r.lead},
          {"blend_ratio", r.blend_adaptive ? json("auto") : json(as_shortest_decimal(r.blend_ratio))},
          {"blend_layer", r.blend_layer},
          {"block_strategy", std::string(to_string(r.block_strategy))}};
}

// Counters by cause, named as /metrics labels them.
template <class Cause, std::size_t N>
json by_cause(const std::array<uint64_t, N>& counts) {
  json out = json::object();
  for (std::size_t i = 0; i < N; ++i) out[std::string(to_string(static_cast<Cause>(i)))] = counts[i];
  return out;
}

json scheduler_json(const SchedulerStats& s) {
  return {{"running", s.running},
          {"queued", s.queued},
          {"requests_finished", s.requests_finished},
          {"generated_tokens", s.generated_tokens},
          {"prompt_tokens_computed", s.prompt_tokens_computed},
          {"preempted", s.preempted},
          {"preempted_by_cause", by_cause<PreemptCause>(s.preempted_by)},
          {"cancelled", s.cancelled},
          {"cancelled_by_cause", by_cause<CancelCause>(s.cancelled_by)},
          {"blend_probed_tokens", s.blend_probed_tokens},
          {"blend_recomputed_tokens", s.blend_recomputed_tokens},
          {"prefill_flops", s.prefill_flops},
          {"kv_budget",
           {{"evicted_blocks_by_reason",
             {{"budget", s.evicted_blocks_budget}, {"pressure", s.evicted_blocks_pressure}}},
            {"evicted_tokens", s.evicted_tokens},
            {"candidates_queued", s.evict_candidates},
            {"protected_blocks", s.evict_protected_blocks},
            {"sequences_over_budget", s.sequences_over_budget}}},
          {"ttft_p50_s", s.ttft_p50_s},
          {"ttft_p95_s", s.ttft_p95_s},
          {"tokens_per_second", s.tokens_per_second},
          {"session_pins",
           {{"sessions", s.session_pins.sessions},
            {"blocks", s.session_pins.blocks},
            {"expired", s.session_pins.expired},
            {"released_for_room", s.session_pins.released_for_room}}}};
}

json kv_events_json(const KvEventPublisher* publisher) {
  if (!publisher) return {{"enabled", false}};
  const KvEventCounters c = publisher->counters();
  return {{"enabled", true},
          {"endpoint", c.endpoint},
          {"replay_endpoint", c.replay_endpoint},
          {"topic", c.topic},
          {"seq", c.batches_published},
          {"batches_published", c.batches_published},
          {"events_published", c.events_published},
          {"events_dropped", c.events_dropped},
          {"replay_requests", c.replay_requests},
          {"blocks_stored", c.blocks_stored},
          {"blocks_removed", c.blocks_removed},
          {"clears", c.clears},
          {"block_hash", publisher->vllm_block_hashes() ? "vllm_sha256_cbor" : "clmcache"},
          {"blocks_unhashable", c.blocks_unhashable}};
}

// What the pool's blocks hold: with q8_0 or q4_0 K/V a block is smaller, so the same
// --kv-memory-mb holds more blocks, hence more tokens.
void add_kv_layout(json& cache, const KvGeometry& g, std::size_t blocks_total) {
  cache["cache_type_k"] = std::string(kv_type_name(g.types.k));
  cache["cache_type_v"] = std::string(kv_type_name(g.types.v));
  cache["block_size"] = g.block_size;
  cache["capacity_tokens"] = blocks_total * static_cast<std::size_t>(g.block_size);
}

}  // namespace

nlohmann::json server_stats_json(ServerContext& ctx) {
  const EngineCacheStats stats = ctx.engine.cache_stats();
  const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  json cache = cache_json(stats.cache);
  add_kv_layout(cache, ctx.engine.pool().geometry(), stats.cache.blocks_total);
  return {{"cache", cache},
          {"kv_events", kv_events_json(ctx.kv_events)},
          {"scheduler", scheduler_json(stats.scheduler)},
          {"reuse", reuse_options_json(ctx.engine.reuse_defaults())},
          {"tiers", tiers_json(stats.tiers)},
          {"server",
           {{"uptime_s", uptime},
            {"in_flight", ctx.in_flight.load()},
            {"connections", ctx.connections.load()},
            {"sessions", ctx.sessions.size()},
            {"draining", ctx.draining.load()}}}};
}

}  // namespace clm
