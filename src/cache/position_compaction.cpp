// KvCacheManager::compact_positions: self-managed context with
// `--evict-positions compact`. Forgotten blocks leave holes in a sequence's
// positions; closing them keeps every position below the length the
// sequence holds, so a model never sees positions past its trained context.
#include <algorithm>

#include "cache/kv_cache_manager.h"
#include "kernels/kv_row_move.h"
#include "util/check.h"

namespace clm {

int32_t KvCacheManager::compact_positions(CachedSequence& seq) {
  BlockTable& t = seq.table;
  const auto& positions = t.positions();
  const int32_t n = seq.written;  // the slots after it are empty (nothing is in flight)
  int32_t first = 0;
  while (first < n && positions[static_cast<std::size_t>(first)] == first) ++first;
  if (first == n) return 0;
  const int32_t bs = block_size_;
  const std::size_t first_block = static_cast<std::size_t>(first / bs);
  const std::size_t end_block = static_cast<std::size_t>((n + bs - 1) / bs);

  // Room for the copies first. A cached block only this sequence holds
  // becomes idle (evictable) once its copy replaces it, so a run of those
  // needs one block at a time; a block another sequence holds stays held.
  std::size_t shared = 0;
  bool cached_own = false;
  for (std::size_t b = first_block; b < end_block; ++b) {
    const BlockId id = t.blocks()[b];
    if (pool_.refcount(id) > 1)
      ++shared;
    else if (cached(id))
      cached_own = true;
  }
  if (shared + (cached_own ? 1 : 0) > available_blocks()) return 0;

  const int32_t closed = positions[static_cast<std::size_t>(n - 1)] + 1 - n;
  const KvGeometry& g = pool_.geometry();
  for (std::size_t b = first_block; b < end_block; ++b) {
    BlockId id = t.blocks()[b];
    if (pool_.refcount(id) > 1 || cached(id)) {
      // Copy-on-write: the original keeps the K its readers and its index
      // entry expect.
      const BlockId copy = allocate_block();
      CLM_CHECK(copy != kNoBlock, "available_blocks promised a block");
      pool_.copy_block(id, copy);
      t.replace_block(b, copy, pool_.block_data(copy));
      if (pool_.release(id) == 0) on_idle(id);
      ++counters_.copy_on_write;
      id = copy;
    }
    // Whole blocks are forgotten, so a block's slots keep consecutive
    // positions and move by one delta; runs are split anyway in case a
    // block holds slots written at different offsets.
    std::byte* data = pool_.block_data(id);
    const int32_t lo = std::max(first, static_cast<int32_t>(b) * bs);
    const int32_t hi = std::min(n, static_cast<int32_t>(b + 1) * bs);
    for (int32_t s = lo; s < hi;) {
      const int32_t delta = s - positions[static_cast<std::size_t>(s)];
      int32_t e = s + 1;
      while (e < hi && e - positions[static_cast<std::size_t>(e)] == delta) ++e;
      if (delta != 0) {
        const int32_t row = s - static_cast<int32_t>(b) * bs;
        move_kv_rows(g, {data, row, data, row, e - s}, deps_.rope, make_rope_shift_table(deps_.rope, delta));
        for (int32_t i = s; i < e; ++i) t.move_position(i, i);
      }
      s = e;
    }
  }
  // The moved blocks are handed to the cache again by the next commit, as
  // span sources at their new positions: nothing after a hole is an exact
  // prefix (exact_limit stopped at the first hole).
  seq.n_cached_blocks = std::min(seq.n_cached_blocks, first_block);
  seq.next_pos -= closed;
  return closed;
}

}  // namespace clm
