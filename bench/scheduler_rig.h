// What the scheduler-level benchmarks (`bench dialogue`, `bench longchat`)
// share: one model, and a fresh pool, cache manager and scheduler per
// scenario so that scenarios never see each other's cached blocks; a greedy
// request of a fixed length; one request run to its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache/kv_pool.h"
#include "engine/evict_policy.h"
#include "engine/scheduler.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct RigOptions {
  int block_size = 32;
  int max_batch_tokens = 512;
  std::size_t n_blocks = 0;  // the pool's size
  bool prefix_caching = true;
  int max_running = 16;
  // Self-managed context (SchedulerOptions::kv_budget_tokens, ::evict).
  int kv_budget_tokens = 0;
  EvictOptions evict;
};

struct SchedulerRig {
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvCacheManager> cache;
  std::unique_ptr<Scheduler> scheduler;
};

// The pool holds f16 K/V; the scheduler's context is unlimited (1 << 20
// tokens), so only the pool and the budgets bound a sequence.
Result<SchedulerRig> make_scheduler_rig(Model& model, ThreadPool& threads, const RigOptions& options);

// Greedy, never stopping at an end token: a fixed amount of work per turn.
Request fixed_length_request(std::vector<int32_t> prompt, int max_tokens);

// Runs one request to completion on this thread; returns its summary.
Result<RequestSummary> run_to_end(Scheduler& scheduler, Request request);

}  // namespace clm
