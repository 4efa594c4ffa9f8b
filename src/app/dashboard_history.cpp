#include "app/dashboard_history.h"

namespace clm {

using nlohmann::json;

DashboardSample dashboard_sample(const EngineCacheStats& stats, double t_s) {
  const CacheStats& c = stats.cache;
  const SchedulerStats& s = stats.scheduler;
  DashboardSample d;
  d.t_s = t_s;
  d.token_hit_rate = c.token_hit_rate();
  d.prompt_tokens = c.prompt_tokens;
  d.prefix_tokens = c.reused_tokens;
  d.shift_tokens = c.shifted_tokens;
  d.recomputed_tokens = c.recomputed_tokens;
  const uint64_t found = c.reused_tokens + c.shifted_tokens + c.recomputed_tokens;
  d.computed_tokens = c.prompt_tokens > found ? c.prompt_tokens - found : 0;
  d.ram_bytes = (c.blocks_used + c.blocks_cached) * c.block_bytes;
  for (const TierCounters& t : stats.tiers.tiers)
    if (t.holds_storage) d.tier_bytes.emplace_back(t.name, t.stored_bytes);
  d.blocks_used = c.blocks_used;
  d.blocks_cached = c.blocks_cached;
  d.blocks_pinned = s.session_pins.blocks;
  d.blocks_free = c.blocks_free;
  d.ttft_p50_s = s.ttft_p50_s;
  d.ttft_p95_s = s.ttft_p95_s;
  d.tokens_per_second = s.tokens_per_second;
  d.generated_tokens = s.generated_tokens;
  d.evictions_capacity = c.evictions_capacity;
  d.evictions_ttl = c.evictions_ttl;
  d.evictions_budget = s.evicted_blocks_budget;
  d.evictions_pressure = s.evicted_blocks_pressure;
  return d;
}

void DashboardHistory::add_sample(DashboardSample sample) {
  std::lock_guard lock(mu_);
  samples_.push_back(std::move(sample));
  while (samples_.size() > limits_.samples) samples_.pop_front();
}

void DashboardHistory::add_request(DashboardRequest request) {
  auto shared = std::make_shared<const DashboardRequest>(std::move(request));
  std::lock_guard lock(mu_);
  requests_.push_back(std::move(shared));
  while (requests_.size() > limits_.requests) requests_.pop_front();
}

DashboardHistory::Snapshot DashboardHistory::snapshot() const {
  std::lock_guard lock(mu_);
  return {{samples_.begin(), samples_.end()}, {requests_.begin(), requests_.end()}};
}

namespace {

// Every field of a sample but the tiers', by its JSON name.
template <class Visit>
void each_field(const DashboardSample& d, Visit&& visit) {
  visit("t_s", json(d.t_s));
  visit("token_hit_rate", json(d.token_hit_rate));
  visit("prompt_tokens", json(d.prompt_tokens));
  visit("prefix_tokens", json(d.prefix_tokens));
  visit("shift_tokens", json(d.shift_tokens));
  visit("recomputed_tokens", json(d.recomputed_tokens));
  visit("computed_tokens", json(d.computed_tokens));
  visit("ram_bytes", json(d.ram_bytes));
  visit("blocks_used", json(d.blocks_used));
  visit("blocks_cached", json(d.blocks_cached));
  visit("blocks_pinned", json(d.blocks_pinned));
  visit("blocks_free", json(d.blocks_free));
  visit("ttft_p50_s", json(d.ttft_p50_s));
  visit("ttft_p95_s", json(d.ttft_p95_s));
  visit("tokens_per_second", json(d.tokens_per_second));
  visit("generated_tokens", json(d.generated_tokens));
  visit("evictions_capacity", json(d.evictions_capacity));
  visit("evictions_ttl", json(d.evictions_ttl));
  visit("evictions_budget", json(d.evictions_budget));
  visit("evictions_pressure", json(d.evictions_pressure));
}

}  // namespace

json samples_json(const std::vector<DashboardSample>& samples) {
  json out = json::object();
  if (!samples.empty()) each_field(samples.front(), [&](const char* name, const json&) { out[name] = json::array(); });
  json tiers = json::object();
  for (const DashboardSample& d : samples) {
    each_field(d, [&](const char* name, json value) { out[name].push_back(std::move(value)); });
    for (const auto& [tier, bytes] : d.tier_bytes) tiers[tier].push_back(bytes);
  }
  out["tier_bytes"] = std::move(tiers);
  return out;
}

json sample_json(const DashboardSample& d) {
  json out = json::object();
  each_field(d, [&](const char* name, json value) { out[name] = std::move(value); });
  json tiers = json::object();
  for (const auto& [tier, bytes] : d.tier_bytes) tiers[tier] = bytes;
  out["tier_bytes"] = std::move(tiers);
  return out;
}

json request_json(const DashboardRequest& r) {
  json runs = json::array();
  for (const SourceRun& run : r.map)
    runs.push_back({{"source", std::string(to_string(run.source))},
                    {"evicted", run.evicted},
                    {"begin", run.begin},
                    {"length", run.length}});
  return {{"id", r.id},
          {"endpoint", r.endpoint},
          {"finished_s", r.finished_s},
          {"prompt_tokens", r.prompt_tokens},
          {"generated_tokens", r.generated_tokens},
          {"reuse",
           {{"prefix", r.usage.prefix},
            {"shift", r.usage.shift},
            {"recomputed", r.usage.recomputed},
            {"computed", r.usage.computed}}},
          {"runs", std::move(runs)},
          {"token_text", r.token_text}};
}

}  // namespace clm
