// KvCacheManager::apply: builds a sequence from a ReusePlan, all or nothing.
// Sources are pinned first, so that making room cannot evict them; a plan
// whose source was evicted or reused since it was made is refused as stale.
#include <cstring>
#include <unordered_set>

#include "cache/kv_cache_manager.h"
#include "kernels/kv_row_move.h"
#include "util/check.h"

namespace clm {

bool KvCacheManager::plan_is_current(const ReusePlan& plan) const {
  auto current = [&](BlockId id, uint32_t generation) {
    return id >= 0 && static_cast<std::size_t>(id) < pool_.n_blocks() &&
           generation_[static_cast<std::size_t>(id)] == generation && cached(id);
  };
  for (std::size_t i = 0; i < plan.prefix_blocks.size(); ++i)
    if (!current(plan.prefix_blocks[i], plan.prefix_generations[i]) || meta(plan.prefix_blocks[i]).key != plan.prefix_keys[i])
      return false;
  if (plan.partial_source != kNoBlock && !current(plan.partial_source, plan.partial_generation)) return false;
  for (const ReuseSpan& s : plan.spans)
    for (const SpanPiece& piece : s.pieces)
      if (!current(piece.block, piece.generation)) return false;
  return true;
}

void KvCacheManager::pin(BlockId id) {
  if (pool_.refcount(id) == 0) {  // idle: leaves the evictable set
    if (eviction_.listed(id)) eviction_.delist(id);
    --n_idle_cached_;
  }
  pool_.retain(id);
}

void KvCacheManager::unpin(BlockId id) {
  if (pool_.release(id) == 0) on_idle(id);
}

ApplyStatus KvCacheManager::apply(CachedSequence& seq, const ReusePlan& plan, std::span<const int32_t> prompt,
                                  uint64_t cache_namespace, int capacity_tokens) {
  CLM_CHECK(seq.table.n_slots() == 0 && seq.table.blocks().empty(), "apply on a sequence in use");
  CLM_CHECK(seq.table.block_size() == block_size_, "sequence and pool disagree on block size");
  if (!plan_is_current(plan)) {
    ++counters_.plans_stale;
    return ApplyStatus::Stale;
  }
  const int32_t bs = block_size_;
  const int32_t extent = plan.spans.empty() ? plan.prefix_tokens : plan.spans.back().dst_begin + plan.spans.back().length;
  const int32_t capacity = std::max({capacity_tokens, extent, plan.prefix_tokens});

  // Room first, changing nothing: pinning takes idle sources out of the
  // evictable set, and with them their idle ancestors (a parent is evicted
  // only after its children).
  std::vector<BlockId> sources;
  if (plan.partial_source != kNoBlock) sources.push_back(plan.partial_source);
  for (const ReuseSpan& s : plan.spans)
    for (const SpanPiece& piece : s.pieces) sources.push_back(piece.block);
  std::unordered_set<BlockId> locked;
  auto lock_idle_chain = [&](BlockId id) {
    for (BlockId a = id; a != kNoBlock && pool_.refcount(a) == 0 && locked.insert(a).second;) a = meta(a).parent_block;
  };
  for (BlockId id : plan.prefix_blocks) lock_idle_chain(id);
  for (BlockId id : sources) lock_idle_chain(id);
  const std::size_t n_shared = plan.prefix_blocks.size();
  const std::size_t n_blocks = static_cast<std::size_t>((capacity + bs - 1) / bs);
  const std::size_t need = n_blocks > n_shared ? n_blocks - n_shared : 0;
  if (need + locked.size() > available_blocks()) return ApplyStatus::NoRoom;
  for (BlockId id : plan.prefix_blocks) pin(id);
  for (BlockId id : sources) pin(id);

  seq.context = KeyContext{fingerprint_, cache_namespace};
  seq.keys.clear();
  ++counters_.sequences;
  counters_.prompt_tokens += prompt.size();
  if (plan.mode != ReuseMode::Off && options_.prefix_caching && prompt.size() >= 2)
    counters_.blocks_looked_up += (prompt.size() - 1) / static_cast<std::size_t>(bs);
  BlockTable& t = seq.table;
  for (std::size_t b = 0; b < n_shared; ++b) {  // each keeps the reference pinned above
    const BlockId id = plan.prefix_blocks[b];
    if (eviction_.count_hit(id)) ++counters_.cached_blocks_hit;
    eviction_.touch(id, now());
    t.push_block(id, pool_.block_data(id));
    for (int32_t i = 0; i < bs; ++i) {
      const int32_t at = static_cast<int32_t>(b) * bs + i;
      t.append(prompt[static_cast<std::size_t>(at)], at);
    }
    seq.keys.push_back(plan.prefix_keys[b]);
    ++counters_.blocks_hit;
  }
  for (std::size_t i = 0; i < need; ++i) {
    const BlockId id = allocate_block();
    CLM_CHECK(id != kNoBlock, "available_blocks promised a block");
    t.push_block(id, pool_.block_data(id));
  }
  if (plan.partial_source != kNoBlock) {
    pool_.copy_block(plan.partial_source, t.blocks()[n_shared]);
    const int32_t first = static_cast<int32_t>(n_shared) * bs;
    for (int32_t at = first; at < first + plan.partial_tokens; ++at) t.append(prompt[static_cast<std::size_t>(at)], at);
    eviction_.touch(plan.partial_source, now());
    ++counters_.partial_block_hits;
  }
  // Slots up to the last span: copied ones get their position now, the
  // others wait empty for the forward pass.
  for (int32_t at = plan.prefix_tokens; at < extent; ++at) t.append(prompt[static_cast<std::size_t>(at)], kEmptySlot);
  for (const ReuseSpan& s : plan.spans) {
    copy_span(s, t);
    counters_.shifted_tokens += static_cast<uint64_t>(s.length - s.lead);
    counters_.recomputed_tokens += static_cast<uint64_t>(s.lead);
    ++counters_.spans_reused;
  }
  zero_empty_slots(t, plan.prefix_tokens, extent);  // what stays empty until computed
  for (BlockId id : sources) {
    eviction_.touch(id, now());
    unpin(id);
  }
  counters_.reused_tokens += static_cast<uint64_t>(plan.prefix_tokens);
  seq.next_pos = extent;
  seq.written = plan.prefix_tokens;
  seq.exact_limit = plan.spans.empty() ? INT32_MAX : plan.spans.front().dst_begin + plan.spans.front().lead;
  seq.n_cached_blocks = n_shared;
  return ApplyStatus::Ok;
}

void KvCacheManager::zero_empty_slots(BlockTable& t, int32_t begin, int32_t end) {
  // A slot not written yet is skipped by attention, but its V row still
  // meets a zero probability in p.v; zero rows keep that product 0 whatever
  // the block held before.
  const KvGeometry& g = pool_.geometry();
  const std::size_t k_row = g.k_row_bytes(), v_row = g.v_row_bytes();
  const auto& positions = t.positions();
  for (int32_t s = begin; s < end; ++s) {
    if (positions[static_cast<std::size_t>(s)] != kEmptySlot) continue;
    std::byte* block = t.view().blocks[static_cast<std::size_t>(s / g.block_size)];
    const std::size_t r = static_cast<std::size_t>(s % g.block_size);
    for (int layer = 0; layer < g.n_layers; ++layer)
      for (int h = 0; h < g.n_kv_heads; ++h) {
        std::memset(block + g.k_offset(layer, h) + r * k_row, 0, k_row);
        std::memset(block + g.v_offset(layer, h) + r * v_row, 0, v_row);
      }
  }
}

void KvCacheManager::copy_span(const ReuseSpan& span, BlockTable& t) {
  const KvGeometry& g = pool_.geometry();
  // One job per piece and destination block; each copies its rows of every
  // layer and head. Jobs write disjoint rows, so they may run in parallel.
  struct Job {
    const std::byte* src_block;
    int32_t src;
    std::byte* dst_block;
    int32_t dst_row;
    int32_t n;
    std::size_t table;  // into tables
  };
  std::vector<Job> jobs;
  std::vector<RopeShiftTable> tables;
  int32_t dst = span.dst_begin;
  int32_t skip = span.lead;  // the lead is computed, not copied
  for (const SpanPiece& piece : span.pieces) {
    int32_t src = piece.offset;
    int32_t left = piece.length;
    const int32_t drop = std::min(skip, left);
    src += drop;
    dst += drop;
    left -= drop;
    skip -= drop;
    if (left == 0) continue;
    const int32_t delta = dst - (piece.src_pos + (src - piece.offset));
    tables.push_back(make_rope_shift_table(deps_.rope, delta));
    while (left > 0) {  // one run per destination block
      const int32_t dst_row = dst % g.block_size;
      const int32_t n = std::min(left, g.block_size - dst_row);
      jobs.push_back({pool_.block_data(piece.block), src, t.view().blocks[static_cast<std::size_t>(dst / g.block_size)],
                      dst_row, n, tables.size() - 1});
      for (int32_t i = 0; i < n; ++i) t.set_position(dst + i, dst + i);
      src += n;
      dst += n;
      left -= n;
    }
  }
  auto run = [&](std::size_t begin, std::size_t end) {
    for (std::size_t j = begin; j < end; ++j) {
      const Job& job = jobs[j];
      move_kv_rows(g, {job.src_block, job.src, job.dst_block, job.dst_row, job.n}, deps_.rope, tables[job.table]);
    }
  };
  if (deps_.threads != nullptr && jobs.size() > 1)
    deps_.threads->parallel_for(jobs.size(), run);
  else
    run(0, jobs.size());
}

}  // namespace clm
