// What the dashboard at GET /dashboard draws, kept in the server: one sample
// of the /stats counters per second for the last ten minutes, and the reuse
// maps of the last 50 finished requests. Both are bounded rings (the oldest
// entry goes when a new one comes). Samples are taken off the scheduler
// thread from the snapshot /stats reads; request maps are recorded by the
// handler that finishes the request, from its summary. One mutex guards
// both, held only to copy in or out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/reuse_map.h"
#include "engine/engine.h"

namespace clm {

// The figures of one moment, as /stats reports them (the cumulative
// counters stay cumulative; the page takes the differences).
struct DashboardSample {
  double t_s = 0.0;  // seconds since the server started
  double token_hit_rate = 0.0;
  uint64_t prompt_tokens = 0;
  uint64_t prefix_tokens = 0;      // cache.reused_tokens
  uint64_t shift_tokens = 0;       // cache.shifted_tokens
  uint64_t recomputed_tokens = 0;  // cache.recomputed_tokens
  uint64_t computed_tokens = 0;    // the rest of prompt_tokens
  uint64_t ram_bytes = 0;          // blocks used or cached, times block_bytes
  std::vector<std::pair<std::string, uint64_t>> tier_bytes;  // tiers that hold storage
  uint64_t blocks_used = 0, blocks_cached = 0, blocks_pinned = 0, blocks_free = 0;
  double ttft_p50_s = 0.0, ttft_p95_s = 0.0, tokens_per_second = 0.0;
  uint64_t generated_tokens = 0;
  uint64_t evictions_capacity = 0, evictions_ttl = 0, evictions_budget = 0, evictions_pressure = 0;
};

DashboardSample dashboard_sample(const EngineCacheStats& stats, double t_s);

// One finished request's reuse map, with the text of its first tokens.
struct DashboardRequest {
  uint64_t id = 0;
  std::string endpoint;
  double finished_s = 0.0;
  int prompt_tokens = 0;
  int generated_tokens = 0;
  ReuseCounts usage;  // as the response's usage reported it
  ReuseMap map;
  std::vector<std::string> token_text;  // the first kDashboardTokensShown prompt tokens
};

// Token text is kept for this many leading prompt tokens of each request;
// the map itself always covers the whole prompt.
inline constexpr std::size_t kDashboardTokensShown = 256;

// The history takes one sample this often.
inline constexpr int kDashboardSampleSeconds = 1;

struct DashboardLimits {
  std::size_t samples = 600;   // at one per second: ten minutes
  std::size_t requests = 50;
};

class DashboardHistory {
 public:
  explicit DashboardHistory(DashboardLimits limits = {}) : limits_(limits) {}

  void add_sample(DashboardSample sample);
  void add_request(DashboardRequest request);

  struct Snapshot {
    std::vector<DashboardSample> samples;                          // oldest first
    std::vector<std::shared_ptr<const DashboardRequest>> requests;  // oldest first
  };
  Snapshot snapshot() const;
  const DashboardLimits& limits() const { return limits_; }

 private:
  const DashboardLimits limits_;
  mutable std::mutex mu_;
  std::deque<DashboardSample> samples_;
  std::deque<std::shared_ptr<const DashboardRequest>> requests_;
};

// The samples column by column ({"t_s": [...], "prefix_tokens": [...], ...}),
// one field of DashboardSample each, and one sample as an object.
nlohmann::json samples_json(const std::vector<DashboardSample>& samples);
nlohmann::json sample_json(const DashboardSample& sample);
nlohmann::json request_json(const DashboardRequest& request);

}  // namespace clm
