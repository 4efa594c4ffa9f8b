// What the scheduler reports about itself: its counters with the queue
// length, TTFT percentiles and throughput, the running sequences' blocks, and
// the cache's counters as of the last step.
#include <algorithm>
#include <vector>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"

namespace clm {

namespace {

// Nearest-rank percentile of an unsorted sample.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(p * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mu_);
  SchedulerStats s = stats_;
  s.queued = static_cast<int>(queue_.size());
  s.ttft_p50_s = percentile(ttft_samples_, 0.50);
  s.ttft_p95_s = percentile(ttft_samples_, 0.95);
  s.tokens_per_second = busy_s_ > 0.0 ? static_cast<double>(s.generated_tokens) / busy_s_ : 0.0;
  return s;
}

std::vector<RunningSequence> Scheduler::running() const {
  std::vector<RunningSequence> out;
  for (const auto& s : running_) out.push_back({s->id, s->kv.table.blocks(), s->kv.table.n_slots(), s->kv.next_pos});
  return out;
}

CacheStats Scheduler::cache_stats() const {
  std::lock_guard lock(mu_);
  return cache_stats_;
}

}  // namespace clm
