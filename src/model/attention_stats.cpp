#include "model/attention_stats.h"

#include <algorithm>
#include <map>

namespace clm {

bool any_attention_stats(const KvView& kv) {
  for (const auto& s : kv.seqs)
    if (!s.slot_mass.empty()) return true;
  return false;
}

void AttentionStatsCollector::begin_layer(std::span<const BatchToken> rows, const KvView& kv, int n_heads,
                                          std::span<const std::size_t> unit_starts) {
  n_heads_ = n_heads;
  const std::size_t H = static_cast<std::size_t>(n_heads);
  const std::size_t n_units = unit_starts.empty() ? rows.size() : unit_starts.size() - 1;
  auto first_row = [&](std::size_t u) { return unit_starts.empty() ? u : unit_starts[u]; };
  offsets_.assign(n_units * H, kNone);
  // Rows of a sequence are grouped by sequence (then unit, then head) so
  // that the reduction walks each sequence's rows in one run.
  std::map<std::size_t, std::vector<std::size_t>> by_seq;  // seq -> its (unit, head) items in order
  std::size_t total = 0;
  for (std::size_t u = 0; u < n_units; ++u) {
    const std::size_t seq = static_cast<std::size_t>(rows[first_row(u)].seq);
    const KvSeqView& sv = kv.seqs[seq];
    if (sv.slot_mass.empty()) continue;
    for (std::size_t h = 0; h < H; ++h) {
      offsets_[u * H + h] = total;
      by_seq[seq].push_back(u * H + h);
      total += sv.slot_positions.size();
    }
  }
  partials_.assign(total, 0.0f);
  items_.clear();
  seqs_.clear();
  std::size_t slot_base = 0;
  for (const auto& [seq, items] : by_seq) {
    seqs_.push_back({seq, items_.size(), items.size(), slot_base});
    for (std::size_t item : items) items_.push_back(offsets_[item]);
    slot_base += kv.seqs[seq].slot_positions.size();
  }
}

void AttentionStatsCollector::end_layer(const KvView& kv, ThreadPool& pool) {
  if (seqs_.empty()) return;
  const std::size_t n = seqs_.back().slot_base + kv.seqs[seqs_.back().seq].slot_positions.size();
  // Slots are independent: spread them over the pool, each summed in the
  // same item order whoever runs it.
  pool.parallel_for(n, [&](std::size_t begin, std::size_t end) {
    auto it = std::upper_bound(seqs_.begin(), seqs_.end(), begin,
                               [](std::size_t i, const SeqRows& r) { return i < r.slot_base; });
    for (--it; begin < end; ++it) {
      const KvSeqView& sv = kv.seqs[it->seq];
      const std::size_t stop = std::min(end, it->slot_base + sv.slot_positions.size());
      for (std::size_t i = begin; i < stop; ++i) {
        const std::size_t s = i - it->slot_base;
        float sum = sv.slot_mass[s];
        for (std::size_t k = 0; k < it->count; ++k) sum += partials_[items_[it->first + k] + s];
        sv.slot_mass[s] = sum;
      }
      begin = stop;
    }
  });
}

void count_attention_queries(std::span<const BatchToken> rows, const KvView& kv) {
  for (const BatchToken& t : rows) {
    const KvSeqView& sv = kv.seqs[static_cast<std::size_t>(t.seq)];
    if (sv.slot_queries.empty()) continue;
    for (std::size_t s = 0; s < sv.slot_positions.size(); ++s) {
      const int32_t p = sv.slot_positions[s];
      if (p != kEmptySlot && p <= t.pos) ++sv.slot_queries[s];
    }
  }
}

}  // namespace clm
