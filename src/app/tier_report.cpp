#include "app/tier_report.h"

#include "tier/circuit_breaker.h"

namespace clm {

namespace {

// The first tier with a breaker named "redis", or null.
const TierCounters* redis_counters(const TierStats& s) {
  for (const TierCounters& t : s.tiers)
    if (t.name == "redis" && !t.breaker_state.empty()) return &t;
  return nullptr;
}

}  // namespace

nlohmann::json tiers_json(const TierStats& s) {
  nlohmann::json list = nlohmann::json::array();
  for (const TierCounters& t : s.tiers) {
    nlohmann::json j = {{"name", t.name},
                        {"hits", t.hits},
                        {"misses", t.misses},
                        {"hit_rate", t.hit_rate()},
                        {"writes", t.writes},
                        {"writes_refused", t.writes_refused}};
    if (!t.breaker_state.empty()) j["breaker_state"] = t.breaker_state;
    list.push_back(std::move(j));
  }
  const TierCounters* redis = redis_counters(s);
  return {{"tiers", std::move(list)},
          {"writes_queued", s.writes_queued},
          {"writes_dropped", s.writes_dropped},
          {"writes_pending", s.writes_pending},
          {"blocks_promoted", s.blocks_promoted},
          {"redis_breaker_state", redis ? nlohmann::json(redis->breaker_state) : nlohmann::json(nullptr)}};
}

void define_tier_metrics(MetricsRegistry& r) {
  r.define_counter("clmcache_tier_hits_total", "KV blocks promoted from a storage tier below RAM, by tier");
  r.define_counter("clmcache_tier_misses_total", "chain lookups whose next block a tier did not have, by tier");
  r.define_gauge("clmcache_tier_hit_rate", "hits / (hits + misses) of a storage tier, by tier");
  r.define_counter("clmcache_tier_writes_total", "KV blocks a storage tier stored, by tier");
  r.define_counter("clmcache_tier_writes_refused_total", "KV blocks a storage tier refused (full, unavailable), by tier");
  r.define_counter("clmcache_tier_writes_queued_total", "KV blocks queued to the tiers' background writer");
  r.define_counter("clmcache_tier_writes_dropped_total", "KV block writes dropped because the writer's queue was full");
  r.define_gauge("clmcache_tier_writes_pending", "KV block writes waiting in the writer's queue");
  r.define_counter("clmcache_tier_blocks_promoted_total", "tier entries copied into the RAM pool");
  r.define_gauge("clmcache_redis_breaker_state",
                 "1 for the Redis circuit breaker's current state (closed, open, half_open), 0 for the others");
}

void update_tier_metrics(MetricsRegistry& r, const TierStats& s) {
  for (const TierCounters& t : s.tiers) {
    const MetricLabels tier = {{"tier", t.name}};
    r.set_counter("clmcache_tier_hits_total", tier, static_cast<double>(t.hits));
    r.set_counter("clmcache_tier_misses_total", tier, static_cast<double>(t.misses));
    r.set("clmcache_tier_hit_rate", tier, t.hit_rate());
    r.set_counter("clmcache_tier_writes_total", tier, static_cast<double>(t.writes));
    r.set_counter("clmcache_tier_writes_refused_total", tier, static_cast<double>(t.writes_refused));
  }
  r.set_counter("clmcache_tier_writes_queued_total", {}, static_cast<double>(s.writes_queued));
  r.set_counter("clmcache_tier_writes_dropped_total", {}, static_cast<double>(s.writes_dropped));
  r.set("clmcache_tier_writes_pending", {}, static_cast<double>(s.writes_pending));
  r.set_counter("clmcache_tier_blocks_promoted_total", {}, static_cast<double>(s.blocks_promoted));
  if (const TierCounters* redis = redis_counters(s))
    for (BreakerState state : {BreakerState::Closed, BreakerState::Open, BreakerState::HalfOpen}) {
      const std::string name = breaker_state_name(state);
      r.set("clmcache_redis_breaker_state", {{"state", name}}, redis->breaker_state == name ? 1.0 : 0.0);
    }
}

}  // namespace clm
