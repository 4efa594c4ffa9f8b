// Admission: queued sequences take the blocks tier reads landed for them,
// then, in FIFO order, a reuse plan applied to the cache, with pressure
// relief from budgeted sequences and session pins before a request waits.
#include <algorithm>
#include <chrono>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"
#include "util/check.h"

namespace clm {

void Scheduler::promote_queued() {
  if (!deps_.tiers) return;
  // Queued sequences leave the queue only on this thread, so the pointers
  // stay valid after the lock is dropped; submit() filled `promoted` before
  // queueing under the lock.
  std::vector<Sequence*> ready;
  {
    std::lock_guard lock(mu_);
    const auto max_running = static_cast<std::size_t>(options_.max_running);
    const std::size_t room = max_running - std::min(running_.size(), max_running);
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      const auto& promoted = queue_[i]->promoted;
      if (!promoted.empty() && (i < room || promoted.front().block != kNoBlock)) ready.push_back(queue_[i].get());
    }
  }
  for (Sequence* s : ready) {
    deps_.tiers->count_promoted(cache_.adopt(s->request.prompt, s->request.cache_namespace, s->promoted));
    s->promoted = {};
  }
}

void Scheduler::admit() {
  std::lock_guard lock(mu_);
  // FIFO: the head of the queue waits for room rather than being overtaken.
  while (!queue_.empty() && running_.size() < static_cast<std::size_t>(options_.max_running)) {
    Sequence& s = *queue_.front();
    const std::span<const int32_t> prompt = s.request.prompt;
    ReuseOptions reuse = s.settings.reuse;
    // A sequence that forgets keeps slot i at prompt position i until its
    // first hole, so it takes an exact prefix at most.
    if (s.budget && reuse.mode != ReuseMode::Off) reuse.mode = ReuseMode::Prefix;
    reuse.reuse_before = s.request.reuse_before();
    ReusePlan plan = cache_.plan(prompt, s.request.cache_namespace, reuse, s.labels);
    // Planned and applied back to back on this thread, so no source can be
    // evicted in between; NoRoom leaves the cache as it was.
    const int capacity = s.admission_tokens(options_.n_ctx);
    ApplyStatus applied = cache_.apply(s.kv, plan, prompt, s.request.cache_namespace, capacity);
    if (applied == ApplyStatus::NoRoom && !running_.empty()) {
      // Running sequences with a budget may forget candidate blocks first:
      // as many as the whole capacity needs (an upper bound: shared prefix
      // blocks need none), and the plan is tried again whatever they gave.
      const std::size_t bs = static_cast<std::size_t>(cache_.pool().geometry().block_size);
      const std::size_t before = cache_.available_blocks();
      relieve_pressure((static_cast<std::size_t>(capacity) + bs - 1) / bs, /*mu_held=*/true);
      if (cache_.available_blocks() > before) {
        plan = cache_.plan(prompt, s.request.cache_namespace, reuse, s.labels);
        applied = cache_.apply(s.kv, plan, prompt, s.request.cache_namespace, capacity);
      }
    }
    if (applied == ApplyStatus::NoRoom && running_.empty()) {
      // Nothing running will free memory: the copied sources, pinned while
      // they are copied, are what does not fit. Take the shared blocks alone.
      plan = plan.shared_blocks_only(s.n_prompt, cache_.pool().geometry().block_size);
      applied = cache_.apply(s.kv, plan, prompt, s.request.cache_namespace, capacity);
      // Pinned conversations give way, oldest first, to a request that
      // cannot get room any other way.
      while (applied == ApplyStatus::NoRoom && pins_.release_oldest())
        applied = cache_.apply(s.kv, plan, prompt, s.request.cache_namespace, capacity);
    }
    CLM_CHECK(applied != ApplyStatus::Stale, "a plan went stale before it was applied");
    if (applied == ApplyStatus::NoRoom) break;
    s.kv.labels = std::move(s.labels.tokens);
    s.kv.intent = s.labels.intent;
    s.reuse = plan.counts(s.n_prompt);
    s.reuse_map = reuse_map_of(plan, s.n_prompt);
    s.compute = plan.compute;
    s.compute_at = s.compute.empty() ? 0 : s.compute.front().begin;
    // A one-layer model has no layer to probe at: blend is shift there.
    if (plan.mode == ReuseMode::Blend && !plan.spans.empty() && model_.config().n_layers >= 2) {
      for (const ReuseSpan& span : plan.spans)
        if (span.length > span.lead) s.copied.push_back({span.dst_begin + span.lead, span.dst_begin + span.length});
      if (!s.copied.empty()) {
        s.probe_region = {plan.prefix_tokens, s.copied.back().end};
        s.probe_at = s.probe_region.begin;
        const auto region = static_cast<std::size_t>(s.probe_region.end - s.probe_region.begin);
        s.deviation.assign(region, 0.0f);
        s.probe_residual.assign(region * static_cast<std::size_t>(model_.config().n_embd), 0.0f);
        s.blend_ratio = reuse.blend_ratio;
        s.blend_adaptive = reuse.blend_adaptive;
        s.kv.final_limit = s.final_limit();
      }
    }
    if (s.request.prompt_logprobs >= 0) s.prompt_logprobs.resize(static_cast<std::size_t>(s.n_prompt));
    s.admitted = std::chrono::steady_clock::now();
    running_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

}  // namespace clm
