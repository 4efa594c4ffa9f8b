// KvCacheManager::plan: what a prompt can take from the cache, decided
// without changing anything. First the exact prefix (the prefix index), then
// in mode Shift the spans found anywhere after it (the span index), tail
// first, since the recent turns are what a user cares most about. Spans
// obey the type guard: every token's block type agrees with the cached
// one's, and the cached sequence had the prompt's intent label. They nest
// by granularity: whole semantic blocks first, then (strategy Token) any
// span in the gaps between them.
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
                               const ReuseOptions& options, const PromptLabels& labels) const {
  ReusePlan p;
  p.mode = options.mode;
  const int32_t n = static_cast<int32_t>(prompt.size());
  // The last prompt token is always computed (its logits are sampled from),
  // and nothing from options.reuse_before on is reused.
  const int32_t reusable = std::clamp(options.reuse_before, 0, std::max(n - 1, 0));
  const bool reuse = options_.prefix_caching && options.mode != ReuseMode::Off && reusable > 0;
  if (reuse) plan_prefix(p, prompt.first(static_cast<std::size_t>(reusable)), cache_namespace);
  if (reuse && options.mode >= ReuseMode::Shift && deps_.rope.head_dim > 0 &&
      options.block_strategy != BlockStrategy::Session)
    plan_spans(p, prompt, reusable, cache_namespace, options, labels);
  int32_t at = p.prefix_tokens;
  for (const ReuseSpan& s : p.spans) {
    const int32_t copy_begin = s.dst_begin + s.lead;
    if (copy_begin > at) p.compute.push_back({at, copy_begin});
    at = s.dst_begin + s.length;
  }
  if (at < n) p.compute.push_back({at, n});
  return p;
}

void KvCacheManager::plan_prefix(ReusePlan& p, std::span<const int32_t> reusable, uint64_t cache_namespace) const {
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = reusable.size() / bs;
  BlockKey parent = kNoKey;
  for (std::size_t b = 0; b < n_full; ++b) {
    const auto tokens = reusable.subspan(b * bs, bs);
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
  const auto [source, k] = best_partial(parent, cache_namespace, reusable.subspan(done));
  if (k > 0) {
    p.partial_source = source;
    p.partial_generation = generation_[static_cast<std::size_t>(source)];
    p.partial_tokens = k;
    p.prefix_tokens += k;
  }
}

void KvCacheManager::plan_spans(ReusePlan& p, std::span<const int32_t> prompt, int32_t reusable,
                                uint64_t cache_namespace, const ReuseOptions& options,
                                const PromptLabels& labels) const {
  const int32_t n = static_cast<int32_t>(prompt.size());
  const int32_t lo = std::max(p.prefix_tokens, options.window > 0 ? n - 1 - options.window : 0);
  const int32_t hi = reusable;
  const bool any_whole = std::any_of(labels.tokens.begin(), labels.tokens.end(),
                                     [](const TokenLabel& l) { return l.whole_block; });
  std::vector<ReuseSpan> blocks;
  if (any_whole) blocks = find_spans(prompt, cache_namespace, options, labels, /*whole_blocks=*/true, lo, hi);
  if (options.block_strategy != BlockStrategy::Token) {
    p.spans = std::move(blocks);
    return;
  }
  // Token spans fill what whole blocks left.
  int32_t at = lo;
  for (ReuseSpan& block : blocks) {
    for (ReuseSpan& s : find_spans(prompt, cache_namespace, options, labels, false, at, block.dst_begin))
      p.spans.push_back(std::move(s));
    at = block.dst_begin + block.length;
    p.spans.push_back(std::move(block));
  }
  for (ReuseSpan& s : find_spans(prompt, cache_namespace, options, labels, false, at, hi))
    p.spans.push_back(std::move(s));
}

std::vector<ReuseSpan> KvCacheManager::find_spans(std::span<const int32_t> prompt, uint64_t cache_namespace,
                                                  const ReuseOptions& options, const PromptLabels& labels,
                                                  bool whole_blocks, int32_t lo, int32_t hi) const {
  constexpr int32_t g = SpanIndex::kGram;
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
  for (int32_t i = hi - g; i >= lo;) {
    ReuseSpan best;
    spans_.for_each_candidate(prompt.subspan(static_cast<std::size_t>(i), g), cache_namespace, kMaxCandidates,
                              [&](BlockId block, int32_t offset) {
                                // A hash collision across namespaces is still not a match.
                                if (meta(block).cache_namespace != cache_namespace) return;
                                ReuseSpan m = extend_match(prompt, labels, cache_namespace, block, offset, i, lo, hi);
                                if (whole_blocks) m = whole_blocks_of(m, labels);
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
  return {std::make_move_iterator(found.rbegin()), std::make_move_iterator(found.rend())};
}

ReuseSpan KvCacheManager::whole_blocks_of(const ReuseSpan& span, const PromptLabels& labels) const {
  // Walk the span once, reading both sides' labels; a run of tokens long
  // enough on both sides, from a block start on both sides to a block end
  // on both sides, covers whole blocks on both sides. The last such run is
  // kept: the search goes tail first, and what lies before it is found later.
  int32_t run_begin = -1, best_begin = 0, best_end = 0, k = 0;
  for (const SpanPiece& piece : span.pieces) {
    for (int32_t j = 0; j < piece.length; ++j, ++k) {
      const TokenLabel src = stored_label(piece.block, piece.offset + j);
      const TokenLabel dst = labels.at(static_cast<std::size_t>(span.dst_begin + k));
      if (!src.whole_block || !dst.whole_block) {
        run_begin = -1;
        continue;
      }
      if (run_begin < 0 && src.block_start && dst.block_start) run_begin = k;
      if (run_begin >= 0 && src.block_end && dst.block_end) {
        best_begin = run_begin;
        best_end = k + 1;
      }
    }
  }
  ReuseSpan out;
  if (best_end == 0) return out;
  out.dst_begin = span.dst_begin + best_begin;
  out.length = best_end - best_begin;
  int32_t at = 0;  // span offset of the current piece
  for (const SpanPiece& piece : span.pieces) {
    const int32_t from = std::max(at, best_begin), to = std::min(at + piece.length, best_end);
    if (from < to) {
      SpanPiece cut = piece;
      cut.offset += from - at;
      cut.src_pos += from - at;
      cut.length = to - from;
      out.pieces.push_back(cut);
    }
    at += piece.length;
  }
  return out;
}

ReuseSpan KvCacheManager::extend_match(std::span<const int32_t> prompt, const PromptLabels& labels,
                                       uint64_t cache_namespace, BlockId block, int32_t offset, int32_t at, int32_t lo,
                                       int32_t hi) const {
  ReuseSpan span;
  // A source token stands in for a prompt token only if both the token and
  // its block type agree; a block cached under another intent label stands
  // in for none.
  auto matches = [&](BlockId b, int32_t o, int32_t dst) {
    return stored_tokens(b)[static_cast<std::size_t>(o)] == prompt[static_cast<std::size_t>(dst)] &&
           same_type(stored_label(b, o).type, labels.at(static_cast<std::size_t>(dst)).type);
  };
  auto same_intent = [&](BlockId b) { return same_type(meta(b).intent, labels.intent); };
  // The hash said these kGram tokens may match; make sure.
  if (at + SpanIndex::kGram > hi || !same_intent(block)) return span;
  for (int32_t k = 0; k < SpanIndex::kGram; ++k)
    if (!matches(block, offset + k, at + k)) return span;

  // Back to where the match starts, crossing into parent blocks.
  BlockId b = block;
  int32_t o = offset, dst = at;
  while (dst > lo) {
    if (o == 0) {
      const BlockId parent = meta(b).parent_block;
      if (parent == kNoBlock || meta(parent).n_tokens == 0 || !same_intent(parent)) break;
      if (!matches(parent, meta(parent).n_tokens - 1, dst - 1)) break;
      b = parent;
      o = meta(parent).n_tokens - 1;
    } else {
      if (!matches(b, o - 1, dst - 1)) break;
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
    while (o < static_cast<int32_t>(src.size()) && dst < hi && matches(b, o, dst)) {
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
      if (meta(child).cache_namespace != cache_namespace || !same_intent(child)) continue;
      const int32_t n_child = meta(child).n_tokens;
      int32_t run = 0;
      while (run < n_child && dst + run < hi && matches(child, run, dst + run)) ++run;
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
