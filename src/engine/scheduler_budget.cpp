// The scheduler's side of KV budgets (engine/kv_budget.h): sequences over
// their budget forget, and under pool pressure running sequences give up
// blocks before anyone is preempted.
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"

namespace clm {

void Scheduler::count_evicted(uint64_t blocks, bool pressure) {
  if (blocks == 0) return;
  std::lock_guard lock(mu_);
  record_evicted(blocks, pressure);
}

void Scheduler::record_evicted(uint64_t blocks, bool pressure) {
  (pressure ? stats_.evicted_blocks_pressure : stats_.evicted_blocks_budget) += blocks;
  stats_.evicted_tokens += blocks * static_cast<uint64_t>(cache_.pool().geometry().block_size);
}

void Scheduler::enforce_budgets(const std::vector<Sequence*>& in_batch) {
  uint64_t blocks = 0;
  for (Sequence* s : in_batch)
    if (s->budget && !s->finished) blocks += static_cast<uint64_t>(s->budget->enforce(cache_, s->kv, model_.tokenizer()));
  count_evicted(blocks, false);
}

bool Scheduler::relieve_pressure(std::size_t need, bool mu_held) {
  uint64_t blocks = 0;
  // Each sequence's policy first sees what it holds (an attached prefix is
  // not seen until its first forward pass).
  for (auto& sp : running_)
    if (!sp->finished && !sp->batched && sp->budget) sp->budget->observe(sp->kv, model_.tokenizer());
  while (cache_.available_blocks() < need) {
    // The lowest-scored candidate of any running sequence goes first.
    Sequence* lowest = nullptr;
    for (auto& sp : running_) {
      Sequence& s = *sp;
      if (s.finished || s.batched || !s.budget || !s.budget->has_candidate()) continue;
      if (!lowest || s.budget->lowest_candidate_score() < lowest->budget->lowest_candidate_score()) lowest = &s;
    }
    if (lowest) {
      blocks += static_cast<uint64_t>(lowest->budget->reclaim(cache_, lowest->kv, 1));
      continue;
    }
    // No candidates anywhere: the longest sequence forgets the block its
    // policy would forget next (protected blocks stay).
    bool shed = false;
    std::vector<Sequence*> longest_first;
    for (auto& sp : running_)
      if (!sp->finished && !sp->batched && sp->budget) longest_first.push_back(sp.get());
    std::sort(longest_first.begin(), longest_first.end(),
              [](Sequence* a, Sequence* b) { return a->budget->live_tokens() > b->budget->live_tokens(); });
    for (Sequence* s : longest_first) {
      const int n = s->budget->shed_one(cache_, s->kv);
      blocks += static_cast<uint64_t>(n);
      if (n > 0) {
        shed = true;
        break;
      }
    }
    if (!shed) break;
  }
  if (mu_held) record_evicted(blocks, true);
  else count_evicted(blocks, true);
  return cache_.available_blocks() >= need;
}

void Scheduler::refresh_budget_gauges() {
  int candidates = 0, protected_blocks = 0, over = 0;
  for (const auto& sp : running_) {
    if (!sp->budget) continue;
    candidates += static_cast<int>(sp->budget->policy().candidates().size());
    protected_blocks += sp->budget->protected_blocks();
    over += sp->budget->over_budget() ? 1 : 0;
  }
  std::lock_guard lock(mu_);
  stats_.evict_candidates = candidates;
  stats_.evict_protected_blocks = protected_blocks;
  stats_.sequences_over_budget = over;
}

}  // namespace clm
