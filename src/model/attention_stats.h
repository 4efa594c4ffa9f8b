// The forward pass's side of the eviction statistics (kv_view.h's slot_mass
// and slot_queries). Attention runs as many work items on many threads, and
// several items read one sequence's slots (its tokens or token groups, times
// its heads), so items never add to the sequence's buffer directly: each
// (unit, head) item gets a private partial row, and after the layer the rows
// are added into slot_mass in a fixed order (units in batch order, heads in
// order). No races, and the sums do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/batch.h"
#include "model/kv_view.h"
#include "util/thread_pool.h"

namespace clm {

// True when some sequence of the view collects statistics.
bool any_attention_stats(const KvView& kv);

class AttentionStatsCollector {
 public:
  // Prepares zeroed partial rows for this layer's attention. A unit is a run
  // of rows of one sequence attended as one item per head: unit u starts at
  // row unit_starts[u] (unit_starts ends with rows.size()); an empty
  // unit_starts means one unit per row.
  void begin_layer(std::span<const BatchToken> rows, const KvView& kv, int n_heads,
                   std::span<const std::size_t> unit_starts);
  // The partial row of (unit, head), or null when its sequence collects nothing.
  float* partial(std::size_t unit, int head) {
    const std::size_t o = offsets_[unit * static_cast<std::size_t>(n_heads_) + static_cast<std::size_t>(head)];
    return o == kNone ? nullptr : partials_.data() + o;
  }
  // Adds the layer's partial rows into each collecting sequence's slot_mass.
  void end_layer(const KvView& kv, ThreadPool& pool);

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // The partial rows of one collecting sequence: items [first, first + count)
  // of items_, in the order they are summed.
  struct SeqRows {
    std::size_t seq, first, count, slot_base;  // slot_base: where its slots start in the flat reduction
  };
  int n_heads_ = 0;
  std::vector<float> partials_;
  std::vector<std::size_t> offsets_;  // per (unit, head): offset of its row in partials_, or kNone
  std::vector<std::size_t> items_;    // offsets of the collecting rows, grouped by sequence
  std::vector<SeqRows> seqs_;
};

// Adds to each collecting sequence's slot_queries, for every row of it, one
// to each slot that row's query could see. rows: those that ran every layer.
void count_attention_queries(std::span<const BatchToken> rows, const KvView& kv);

}  // namespace clm
