#include "engine/engine_options.h"

#include "engine/kv_budget.h"

namespace clm {

Status check_engine_options(const EngineOptions& o) {
  const SchedulerOptions& s = o.scheduler;
  const ReuseOptions& reuse = s.reuse;
  if (s.n_ctx <= 0) return fail("context size must be positive");
  if (o.pool.block_size <= 0 || o.pool.block_size > 4096) return fail("block size must be in 1..4096");
  if (o.load.n_threads < 0) return fail("thread count must not be negative");
  if (s.max_batch_tokens <= 0) return fail("max batch tokens must be positive");
  if (s.max_running <= 0) return fail("max running sequences must be positive");
  if (s.max_queued < 0) return fail("max queued requests must not be negative");
  if (reuse.min_reuse_tokens < 1) return fail("min reuse tokens must be at least 1");
  if (reuse.window < 0) return fail("reuse window must not be negative");
  if (reuse.lead < 0) return fail("reuse lead must not be negative");
  if (s.kv_budget_tokens < 0) return fail("kv budget must not be negative");
  if (s.kv_budget_tokens > 0) {
    // The same checks a request meets, once at start: a bad budget or
    // protect rule is a startup error, not every request's.
    if (auto b = KvBudget::create(s.kv_budget_tokens, s.evict, o.pool.block_size); !b)
      return fail("--kv-budget-tokens: " + b.error().message);
  }
  if (!(reuse.blend_ratio >= 0.0f && reuse.blend_ratio <= 1.0f)) return fail("blend ratio must be in [0, 1]");
  if (reuse.blend_layer < 1) return fail("blend layer must be at least 1");
  if (!(s.session_pins.max_share >= 0.0 && s.session_pins.max_share <= 1.0))
    return fail("session pin share must be in [0, 1]");
  return {};
}

}  // namespace clm
