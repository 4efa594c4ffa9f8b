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

double disk_cache_gb(const TierStats& s) { return static_cast<double>(s.disk_cache_bytes()) / 1e9; }

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
    if (!t.breaker_state.empty()) {
      j["breaker_state"] = t.breaker_state;
      j["damaged_values"] = t.damaged_values;
      j["unauthenticated_values"] = t.unauthenticated_values;
    }
    if (t.holds_storage) {
      j["stored_bytes"] = t.stored_bytes;
      j["quarantined"] = t.quarantined;
    }
    list.push_back(std::move(j));
  }
  const TierCounters* redis = redis_counters(s);
  bool any_storage = false;
  nlohmann::json hit_rates = nlohmann::json::object();
  for (const TierCounters& t : s.tiers) {
    any_storage = any_storage || t.holds_storage;
    hit_rates[t.name] = t.hit_rate();
  }
  return {{"tiers", std::move(list)},
          {"disk_cache_size_gb", any_storage ? nlohmann::json(disk_cache_gb(s)) : nlohmann::json(nullptr)},
          {"quarantined_files", s.quarantined()},
          {"hit_rates", std::move(hit_rates)},
          {"copies_to_faster", s.copies_to_faster},
          {"writes_queued", s.writes_queued},
          {"writes_dropped", s.writes_dropped},
          {"writes_pending", s.writes_pending},
          {"blocks_promoted", s.blocks_promoted},
          {"unavailable", s.unavailable},
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
  r.define_counter("clmcache_tier_copies_to_faster_total",
                   "entries read from a slower tier (Redis) queued to the faster ones (the disk)");
  r.define_gauge("clmcache_disk_cache_size_gb", "GB (10^9 bytes) held by the disk or SQLite tier");
  r.define_gauge("clmcache_tier_quarantined_files", "damaged entries a disk or SQLite tier set aside, by tier");
  r.define_counter("clmcache_tier_values_damaged_total",
                   "values a remote tier (Redis) read back and refused: they failed a check, by tier");
  r.define_counter("clmcache_tier_values_unauthenticated_total",
                   "of those, values whose MAC did not verify under --redis-secret, by tier");
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
    if (t.holds_storage) r.set("clmcache_tier_quarantined_files", tier, static_cast<double>(t.quarantined));
    if (!t.breaker_state.empty()) {
      r.set_counter("clmcache_tier_values_damaged_total", tier, static_cast<double>(t.damaged_values));
      r.set_counter("clmcache_tier_values_unauthenticated_total", tier, static_cast<double>(t.unauthenticated_values));
    }
  }
  r.set_counter("clmcache_tier_copies_to_faster_total", {}, static_cast<double>(s.copies_to_faster));
  r.set("clmcache_disk_cache_size_gb", {}, disk_cache_gb(s));
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
