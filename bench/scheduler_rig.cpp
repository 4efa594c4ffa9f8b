#include "scheduler_rig.h"

#include <string>
#include <utility>

namespace clm {

Result<SchedulerRig> make_scheduler_rig(Model& model, ThreadPool& threads, const RigOptions& o) {
  const ModelConfig& c = model.config();
  KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, o.block_size, KvType::F16};
  auto pool = KvPool::create(g, o.n_blocks);
  if (!pool) return std::unexpected(pool.error());
  SchedulerRig rig;
  rig.pool = std::move(*pool);
  CacheOptions co;
  co.prefix_caching = o.prefix_caching;
  rig.cache = std::make_unique<KvCacheManager>(*rig.pool, /*model_fingerprint=*/1, co);
  SchedulerOptions so;
  so.max_batch_tokens = o.max_batch_tokens;
  so.max_running = o.max_running;
  so.max_queued = 4096;
  so.n_ctx = 1 << 20;
  so.kv_budget_tokens = o.kv_budget_tokens;
  so.evict = o.evict;
  rig.scheduler = std::make_unique<Scheduler>(model, *rig.cache, threads, so);
  return rig;
}

Request fixed_length_request(std::vector<int32_t> prompt, int max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.stop_at_end_of_generation = false;
  r.sampler.temperature = 0.0f;
  return r;
}

Result<RequestSummary> run_to_end(Scheduler& s, Request r) {
  RequestSummary out;
  auto id = s.submit(std::move(r), [](const TokenEvent&) { return true; },
                     [&out](const RequestSummary& summary) { out = summary; });
  if (!id) return std::unexpected(id.error());
  s.run_until_idle();
  if (out.stop_reason == StopReason::Error) return fail("bench: request failed: " + out.error);
  return out;
}

}  // namespace clm
