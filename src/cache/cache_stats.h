// CacheStats: how well the KV cache is doing, as counters a snapshot copies.
// Ratios are derived on read so the counters stay the single source of truth.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clm {

struct CacheStats {
  // Requests and tokens.
  uint64_t sequences = 0;          // sequences begun
  uint64_t prompt_tokens = 0;      // prompt tokens seen by begin_sequence
  uint64_t reused_tokens = 0;      // of those, attached from the prefix index
  uint64_t blocks_looked_up = 0;   // full prompt blocks looked up in the index
  uint64_t blocks_hit = 0;         // of those, found resident
  uint64_t partial_block_hits = 0; // leading tokens of a cached block copied (reused_tokens counts them)
  // Non-prefix reuse (mode shift).
  uint64_t shifted_tokens = 0;     // prompt tokens copied from a span elsewhere, K re-rotated
  uint64_t recomputed_tokens = 0;  // found in a span but computed anyway (span leads, blend's picks)
  uint64_t spans_reused = 0;       // spans copied
  uint64_t plans_stale = 0;        // plans whose source was evicted before apply (replanned)
  // Blocks now.
  std::size_t blocks_total = 0;
  std::size_t blocks_used = 0;     // referenced by a live sequence
  std::size_t blocks_cached = 0;   // unreferenced but resident and reusable
  std::size_t blocks_free = 0;     // holding nothing
  std::size_t prefix_blocks = 0;   // full exact blocks in the prefix index (what KV events call stored in "cpu")
  std::size_t block_bytes = 0;
  // Lifetime of cached blocks.
  uint64_t blocks_ever_cached = 0;       // registered in the prefix index
  uint64_t tails_kept = 0;               // partly filled last blocks kept for partial reuse
  uint64_t cached_blocks_hit = 0;        // of those, hit at least once
  uint64_t evictions_capacity = 0;       // dropped to make room
  uint64_t evictions_ttl = 0;            // dropped after their time-to-live
  uint64_t copy_on_write = 0;            // shared blocks copied before a write
  uint64_t blocks_deduplicated = 0;      // computed twice concurrently; one copy adopted
  uint64_t blocks_forgotten = 0;         // dropped from a live sequence over its KV budget (evict_block)

  double block_hit_rate() const { return ratio(blocks_hit, blocks_looked_up); }
  double token_hit_rate() const { return ratio(reused_tokens, prompt_tokens); }
  // Prompt tokens not computed: exact prefix plus shifted spans.
  double reuse_rate() const { return ratio(reused_tokens + shifted_tokens, prompt_tokens); }
  // avg_reuse_depth: prompt tokens reused (exact prefix plus shifted spans)
  // per sequence begun: how deep into a prompt reuse reaches on average.
  double avg_reuse_depth() const { return ratio(reused_tokens + shifted_tokens, sequences); }
  double cache_efficiency_ratio() const { return ratio(cached_blocks_hit, blocks_ever_cached); }
  double memory_used_mb() const {
    return static_cast<double>((blocks_used + blocks_cached) * block_bytes) / (1024.0 * 1024.0);
  }

 private:
  static double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }
};

}  // namespace clm
