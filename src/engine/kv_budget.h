// KvBudget: one live sequence's KV budget (self-managed context, DESIGN.md
// "Eviction: two different questions", question 2). It joins the model-free
// EvictPolicy to the sequence's cache blocks: a policy block is one KV block,
// the policy sees every token the sequence has processed (its slot index
// counts forgotten ones too), and what the policy forgets is dropped from
// the table through KvCacheManager::evict_block, so that the sequence's
// blocks stay bounded while its positions keep growing. It owns the
// attention statistics buffers the forward pass fills (one entry per table
// slot). Only sequences that can outgrow their budget get one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "engine/evict_policy.h"
#include "model/kv_view.h"
#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

// What the positions of the kept tokens become once blocks are forgotten.
// Keep: every token keeps the position it was computed at (holes stay, and
// positions grow past the context). Compact: the holes are closed, kept K
// re-rotated (KvCacheManager::compact_positions), so positions stay below
// the length held, for models that must stay inside their trained context.
enum class EvictPositions : uint8_t { Keep, Compact };
std::string_view evict_positions_name(EvictPositions p);
std::optional<EvictPositions> parse_evict_positions(std::string_view name);

class KvBudget {
 public:
  // `options.block_tokens` is replaced by the cache's block size: the policy
  // forgets whole KV blocks. Fails if the protect rules do not compile or
  // the budget cannot hold the blocks the policy never evicts.
  static Result<KvBudget> create(int budget_tokens, EvictOptions options, int block_size,
                                 EvictPositions positions = EvictPositions::Keep);
  // The smallest budget worth having with these options: the sink blocks,
  // the recent window rounded up to blocks, and one block to forget.
  static int minimum_tokens(const EvictOptions& options, int block_size);

  int budget_tokens() const { return budget_; }
  // Table slots forgotten so far (whole blocks).
  int evicted_tokens() const { return static_cast<int>(evicted_.size()) * block_size_; }
  // The prompt tokens forgotten so far, as ranges of prompt positions.
  std::vector<PromptRange> forgotten_prompt_ranges(int prompt_tokens) const;
  const EvictPolicy& policy() const { return policy_; }
  EvictPositions positions() const { return positions_; }
  // Positions closed by compaction so far: prompt token p is computed at
  // position p - closed_positions().
  int32_t closed_positions() const { return closed_; }

  // The sequence's view with statistics buffers as long as its slots.
  KvSeqView view(const CachedSequence& kv);
  // The policy sees the tokens written since it last looked (their text,
  // for the protect rules) and aggregates the statistics when due.
  void observe(const CachedSequence& kv, const Tokenizer& tokenizer);
  // After a forward pass committed the sequence's new K/V: observe(), then
  // the blocks the policy picks to bring the sequence within budget are
  // forgotten. Returns how many.
  int enforce(KvCacheManager& cache, CachedSequence& kv, const Tokenizer& tokenizer);
  // Under pool pressure: forgets up to max_blocks candidates, lowest first.
  int reclaim(KvCacheManager& cache, CachedSequence& kv, int max_blocks);
  // Under pool pressure when no sequence has candidates: forgets the one
  // block the policy would forget next (never a block it protects).
  // Returns 0 when only such blocks are left.
  int shed_one(KvCacheManager& cache, CachedSequence& kv);
  int live_tokens() const { return policy_.live_tokens(); }
  // The score of the lowest queued candidate, or nothing when none is queued.
  bool has_candidate() const { return !policy_.candidates().empty(); }
  double lowest_candidate_score() const;
  // Blocks the protect rules keep now.
  int protected_blocks() const;
  // Live tokens above the budget (blocks the policy may not forget).
  bool over_budget() const { return policy_.live_tokens() > budget_; }

 private:
  KvBudget(int budget, EvictPolicy policy, int block_size, EvictPositions positions)
      : budget_(budget), block_size_(block_size), policy_(std::move(policy)), positions_(positions) {}
  // Table block of a policy block that is still held.
  std::size_t table_block(int policy_block) const;
  void forget(KvCacheManager& cache, CachedSequence& kv, const std::vector<EvictedBlock>& blocks);

  int budget_;
  int block_size_;
  EvictPolicy policy_;
  EvictPositions positions_;
  int32_t closed_ = 0;
  std::vector<int> evicted_;  // policy blocks forgotten, ascending
  std::vector<float> mass_;   // per table slot, since the last aggregation
  std::vector<uint32_t> queries_;
};

}  // namespace clm
