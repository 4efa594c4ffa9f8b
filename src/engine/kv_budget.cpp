#include "engine/kv_budget.h"

#include <algorithm>
#include <string>

namespace clm {

std::string_view evict_positions_name(EvictPositions p) { return p == EvictPositions::Compact ? "compact" : "keep"; }

std::optional<EvictPositions> parse_evict_positions(std::string_view name) {
  if (name == "keep") return EvictPositions::Keep;
  if (name == "compact") return EvictPositions::Compact;
  return std::nullopt;
}

int KvBudget::minimum_tokens(const EvictOptions& options, int block_size) {
  const int recent_blocks = (options.recent_tokens + block_size - 1) / block_size;
  return (options.sink_blocks + recent_blocks + 1) * block_size;
}

Result<KvBudget> KvBudget::create(int budget_tokens, EvictOptions options, int block_size, EvictPositions positions) {
  options.block_tokens = block_size;
  const int minimum = minimum_tokens(options, block_size);
  if (budget_tokens < minimum)
    return fail(ErrorKind::InvalidRequest,
                "kv budget of " + std::to_string(budget_tokens) + " tokens is below the least the eviction policy needs (" +
                    std::to_string(minimum) + ": the sink blocks, the recent window of " +
                    std::to_string(options.recent_tokens) + " tokens and one block of " + std::to_string(block_size) +
                    " to forget)");
  auto policy = EvictPolicy::create(std::move(options));
  if (!policy) return fail(ErrorKind::InvalidRequest, policy.error().message);
  return KvBudget(budget_tokens, std::move(*policy), block_size, positions);
}

KvSeqView KvBudget::view(const CachedSequence& kv) {
  const std::size_t n = static_cast<std::size_t>(kv.table.n_slots());
  mass_.resize(n, 0.0f);
  queries_.resize(n, 0);
  KvSeqView v = kv.table.view();
  v.slot_mass = mass_;
  v.slot_queries = queries_;
  return v;
}

std::vector<PromptRange> KvBudget::forgotten_prompt_ranges(int prompt_tokens) const {
  // A policy block's slots are the tokens of the stream (prompt, then
  // generated) in order, whatever was forgotten before them.
  std::vector<PromptRange> out;
  for (int b : evicted_) {
    const int32_t begin = b * block_size_;
    if (begin >= prompt_tokens) break;
    out.push_back({begin, std::min(begin + block_size_, prompt_tokens)});
  }
  return out;
}

std::size_t KvBudget::table_block(int policy_block) const {
  const auto before = std::lower_bound(evicted_.begin(), evicted_.end(), policy_block) - evicted_.begin();
  return static_cast<std::size_t>(policy_block - static_cast<int>(before));
}

int KvBudget::enforce(KvCacheManager& cache, CachedSequence& kv, const Tokenizer& tokenizer) {
  observe(kv, tokenizer);
  const auto picked = policy_.fit_budget(budget_);
  forget(cache, kv, picked);
  return static_cast<int>(picked.size());
}

void KvBudget::observe(const CachedSequence& kv, const Tokenizer& tokenizer) {
  // Forgotten blocks all lie in what the policy has seen, so the policy slot
  // of table slot s past them is s + evicted_tokens().
  const int seen = evicted_tokens() + kv.written;
  if (policy_.n_tokens() < seen) {
    std::vector<std::string> pieces;
    for (int p = policy_.n_tokens(); p < seen; ++p)
      pieces.push_back(tokenizer.token_to_piece(kv.table.tokens()[static_cast<std::size_t>(p - evicted_tokens())]));
    policy_.append(pieces);
  }
  if (policy_.aggregation_due()) {
    // The statistics in policy slot order; forgotten slots hold 0.
    const std::size_t n = static_cast<std::size_t>(policy_.n_tokens());
    std::vector<float> mass(n, 0.0f);
    std::vector<uint32_t> queries(n, 0);
    const std::size_t bs = static_cast<std::size_t>(block_size_);
    std::size_t policy_block = 0, next_evicted = 0;
    for (std::size_t j = 0; j * bs < mass_.size(); ++j, ++policy_block) {
      while (next_evicted < evicted_.size() && static_cast<std::size_t>(evicted_[next_evicted]) == policy_block)
        ++policy_block, ++next_evicted;
      for (std::size_t o = 0; o < bs && j * bs + o < mass_.size(); ++o) {
        const std::size_t p = policy_block * bs + o;
        if (p >= n) break;
        mass[p] = mass_[j * bs + o];
        queries[p] = queries_[j * bs + o];
      }
    }
    policy_.aggregate(mass, queries);
    std::fill(mass_.begin(), mass_.end(), 0.0f);
    std::fill(queries_.begin(), queries_.end(), 0u);
  }
}

int KvBudget::reclaim(KvCacheManager& cache, CachedSequence& kv, int max_blocks) {
  const auto picked = policy_.reclaim_candidates(max_blocks);
  forget(cache, kv, picked);
  return static_cast<int>(picked.size());
}

int KvBudget::shed_one(KvCacheManager& cache, CachedSequence& kv) {
  const auto picked = policy_.fit_budget(policy_.live_tokens() - 1);
  forget(cache, kv, picked);
  return static_cast<int>(picked.size());
}

void KvBudget::forget(KvCacheManager& cache, CachedSequence& kv, const std::vector<EvictedBlock>& blocks) {
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  for (const EvictedBlock& e : blocks) {
    const std::size_t j = table_block(e.block);
    cache.evict_block(kv, j);
    const std::size_t first = std::min(mass_.size(), j * bs);
    const std::size_t last = std::min(mass_.size(), (j + 1) * bs);
    mass_.erase(mass_.begin() + static_cast<std::ptrdiff_t>(first), mass_.begin() + static_cast<std::ptrdiff_t>(last));
    queries_.erase(queries_.begin() + static_cast<std::ptrdiff_t>(first),
                   queries_.begin() + static_cast<std::ptrdiff_t>(last));
    evicted_.insert(std::upper_bound(evicted_.begin(), evicted_.end(), e.block), e.block);
  }
  // Closes the holes (and any an earlier call found no room to close).
  if (positions_ == EvictPositions::Compact && !blocks.empty()) closed_ += cache.compact_positions(kv);
}

double KvBudget::lowest_candidate_score() const {
  const std::vector<int> c = policy_.candidates();
  return c.empty() ? 0.0 : policy_.score(c.front());
}

int KvBudget::protected_blocks() const {
  int n = 0;
  for (int b = 0; b < policy_.n_blocks(); ++b) n += policy_.status(b) == BlockStatus::Protected;
  return n;
}

}  // namespace clm
