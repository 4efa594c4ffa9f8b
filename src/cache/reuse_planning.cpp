// KvCacheManager::plan: what a prompt can take from the cache, decided
// without changing anything. First the exact prefix (the prefix index), then
// in mode Shift the spans found anywhere after it (the span index), tail
// first, since the recent turns are what a user cares most about.
#include <algorithm>
#include <cstdlib>

#include "cache/kv_cache_manager.h"

namespace clm {

namespace {

// Candidates examined per prompt offset: bounds the work on text that is
// cached many times over (each copy is an equally good source).
constexpr std::size_t kMaxCandidates = 64;

bool all_exact(const ReuseSpan& s, const auto& is_exact) {
  return std::all_of(s.pieces.begin(), s.pieces.end(), [&](const SpanPiece& p) { return is_exact(p.block); });
}

}  // namespace

ReusePlan KvCacheManager::plan(std::span<const int32_t> prompt, uint64_t cache_namespace,
                               const ReuseOptions& options) const {
  ReusePlan p;
  p.mode = options.mode;
  const int32_t n = static_cast<int32_t>(prompt.size());
  const bool reuse = options_.prefix_caching && options.mode != ReuseMode::Off && n >= 2;
  if (reuse) plan_prefix(p, prompt, cache_namespace);
  if (reuse && options.mode >= ReuseMode::Shift && options_.rope.head_dim > 0)
    plan_spans(p, prompt, cache_namespace, options);
  int32_t at = p.prefix_tokens;
  for (const ReuseSpan& s : p.spans) {
    const int32_t copy_begin = s.dst_begin + s.lead;
    if (copy_begin > at) p.compute.push_back({at, copy_begin});
    at = s.dst_begin + s.length;
  }
  if (at < n) p.compute.push_back({at, n});
  return p;
}

void KvCacheManager::plan_prefix(ReusePlan& p, std::span<const int32_t> prompt, uint64_t cache_namespace) const {
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = (prompt.size() - 1) / bs;
  BlockKey parent = kNoKey;
  for (std::size_t b = 0; b < n_full; ++b) {
    const auto tokens = prompt.subspan(b * bs, bs);
    const BlockKey key = key_of(parent, tokens, context);
    const BlockId id = lookup(key, parent, tokens, cache_namespace);
    if (id == kNoBlock) break;
    p.prefix_blocks.push_back(id);
    p.prefix_keys.push_back(key);
    p.prefix_generations.push_back(generation_[static_cast<std::size_t>(id)]);
    parent = key;
  }
  const std::size_t done = p.prefix_blocks.size() * bs;
  p.prefix_tokens = static_cast<int32_t>(done);
  // A cached block that continues the prompt for only its first k tokens
  // still holds exactly their K/V (a token's K/V depends on its prefix
  // alone); they are copied, since the rest of it belongs to another text.
  const auto [source, k] = best_partial(parent, cache_namespace, prompt.subspan(done, prompt.size() - 1 - done));
  if (k > 0) {
    p.partial_source = source;
    p.partial_generation = generation_[static_cast<std::size_t>(source)];
    p.partial_tokens = k;
    p.prefix_tokens += k;
  }
}

void KvCacheManager::plan_spans(ReusePlan& p, std::span<const int32_t> prompt, uint64_t cache_namespace,
                                const ReuseOptions& options) const {
  constexpr int32_t g = SpanIndex::kGram;
  const int32_t n = static_cast<int32_t>(prompt.size());
  const int32_t lo = std::max(p.prefix_tokens, options.window > 0 ? n - 1 - options.window : 0);
  const int32_t min_len = std::max({options.min_reuse_tokens, 1, options.lead + 1});
  auto is_exact = [&](BlockId id) { return meta(id).key != kNoKey; };
  // A longer span is better; then one computed in its true context; then
  // the one that moves least.
  auto better = [&](const ReuseSpan& a, const ReuseSpan& b) {
    if (a.length != b.length) return a.length > b.length;
    if (b.length == 0) return false;
    const bool ea = all_exact(a, is_exact), eb = all_exact(b, is_exact);
    if (ea != eb) return ea;
    return std::abs(a.dst_begin - a.pieces[0].src_pos) < std::abs(b.dst_begin - b.pieces[0].src_pos);
  };
  std::vector<ReuseSpan> found;  // tail first
  int32_t hi = n - 1;            // the last prompt token is always computed
  for (int32_t i = hi - g; i >= lo;) {
    ReuseSpan best;
    spans_.for_each_candidate(prompt.subspan(static_cast<std::size_t>(i), g), kMaxCandidates,
                              [&](BlockId block, int32_t offset) {
                                if (meta(block).cache_namespace != cache_namespace) return;
                                ReuseSpan m = extend_match(prompt, cache_namespace, block, offset, i, lo, hi);
                                if (better(m, best)) best = std::move(m);
                              });
    if (best.length < min_len) {
      --i;
      continue;
    }
    best.lead = std::min(options.lead, best.length);
    hi = best.dst_begin;
    i = hi - g;
    found.push_back(std::move(best));
  }
  p.spans.assign(std::make_move_iterator(found.rbegin()), std::make_move_iterator(found.rend()));
}

ReuseSpan KvCacheManager::extend_match(std::span<const int32_t> prompt, uint64_t cache_namespace, BlockId block,
                                       int32_t offset, int32_t at, int32_t lo, int32_t hi) const {
  ReuseSpan span;
  auto token_at = [&](BlockId b, int32_t o) { return stored_tokens(b)[static_cast<std::size_t>(o)]; };
  // The hash said these kGram tokens may match; make sure.
  if (at + SpanIndex::kGram > hi) return span;
  for (int32_t k = 0; k < SpanIndex::kGram; ++k)
    if (token_at(block, offset + k) != prompt[static_cast<std::size_t>(at + k)]) return span;

  // Back to where the match starts, crossing into parent blocks.
  BlockId b = block;
  int32_t o = offset, dst = at;
  while (dst > lo) {
    if (o == 0) {
      const BlockId parent = meta(b).parent_block;
      if (parent == kNoBlock || meta(parent).n_tokens == 0) break;
      if (token_at(parent, meta(parent).n_tokens - 1) != prompt[static_cast<std::size_t>(dst - 1)]) break;
      b = parent;
      o = meta(parent).n_tokens - 1;
    } else {
      if (token_at(b, o - 1) != prompt[static_cast<std::size_t>(dst - 1)]) break;
      --o;
    }
    --dst;
  }

  // Forward from there, one piece per source block, choosing at each block
  // end the child that continues the prompt furthest within itself.
  span.dst_begin = dst;
  while (b != kNoBlock && dst < hi) {
    SpanPiece piece{b, generation_[static_cast<std::size_t>(b)], o, 0, meta(b).first_pos + o};
    const auto src = stored_tokens(b);
    while (o < static_cast<int32_t>(src.size()) && dst < hi && src[static_cast<std::size_t>(o)] == prompt[static_cast<std::size_t>(dst)]) {
      ++o;
      ++dst;
      ++piece.length;
    }
    if (piece.length == 0) break;
    span.pieces.push_back(piece);
    if (o < static_cast<int32_t>(src.size()) || dst >= hi) break;
    BlockId next = kNoBlock;
    int32_t next_run = 0;
    for (auto [it, last] = child_blocks_.equal_range(b); it != last; ++it) {
      const BlockId child = it->second;
      if (meta(child).cache_namespace != cache_namespace) continue;
      const auto ct = stored_tokens(child);
      int32_t run = 0;
      while (run < static_cast<int32_t>(ct.size()) && dst + run < hi &&
             ct[static_cast<std::size_t>(run)] == prompt[static_cast<std::size_t>(dst + run)])
        ++run;
      if (run > next_run) {
        next = child;
        next_run = run;
      }
    }
    b = next;
    o = 0;
  }
  span.length = dst - span.dst_begin;
  return span;
}

}  // namespace clm
