#include "model/attention_groups.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace clm {

int shared_leading_slots(const KvSeqView& a, const KvSeqView& b, int block_size) {
  const std::size_t n_blocks = std::min(a.blocks.size(), b.blocks.size());
  const std::size_t bs = static_cast<std::size_t>(block_size);
  std::size_t shared = 0;
  for (std::size_t i = 0; i < n_blocks; ++i) {
    if (a.blocks[i] != b.blocks[i]) break;
    const std::size_t end = std::min({(i + 1) * bs, a.slot_positions.size(), b.slot_positions.size()});
    if (end <= i * bs) break;
    if (std::memcmp(a.slot_positions.data() + i * bs, b.slot_positions.data() + i * bs,
                    (end - i * bs) * sizeof(int32_t)) != 0)
      break;
    shared = end;
    if (end < (i + 1) * bs) break;
  }
  return static_cast<int>(shared);
}

void arrange_attention_groups(std::span<const BatchToken> rows, const KvView& kv, bool cascades,
                              std::vector<AttentionGroup>& groups, int max_cascade) {
  max_cascade = std::clamp(max_cascade, 1, kMaxCascadeQueries);
  groups.clear();
  // Rows alone in their run: cascade candidates. Kept per thread and only
  // grown, so that a steady decode step does not allocate here.
  thread_local std::vector<uint32_t> singles;
  singles.clear();
  for (std::size_t t = 0; t < rows.size();) {
    AttentionGroup grp;
    std::size_t u = t;
    while (u < rows.size() && rows[u].seq == rows[t].seq && grp.n_rows < kMaxGroupQueries)
      grp.rows[grp.n_rows++] = static_cast<uint32_t>(u++);
    const KvSeqView& sv = kv.seqs[static_cast<std::size_t>(rows[t].seq)];
    grp.shared_slots = static_cast<int>(sv.slot_positions.size());
    if (cascades && grp.n_rows == 1)
      singles.push_back(static_cast<uint32_t>(t));
    else
      groups.push_back(grp);
    t = u;
  }
  if (singles.empty()) return;

  // Sequences with the same leading blocks sort next to each other; runs of
  // them sharing at least one block become cascades. Equal block lists keep
  // their batch order (the row index breaks ties), as a stable sort would,
  // without the buffer std::stable_sort allocates.
  auto view = [&](uint32_t t) -> const KvSeqView& { return kv.seqs[static_cast<std::size_t>(rows[t].seq)]; };
  std::sort(singles.begin(), singles.end(), [&](uint32_t x, uint32_t y) {
    const auto& bx = view(x).blocks;
    const auto& by = view(y).blocks;
    const auto order = std::lexicographical_compare_three_way(bx.begin(), bx.end(), by.begin(), by.end());
    return order != 0 ? order < 0 : x < y;
  });
  const int bs = kv.geometry.block_size;
  for (std::size_t i = 0; i < singles.size();) {
    AttentionGroup grp;
    grp.rows[grp.n_rows++] = singles[i];
    grp.shared_slots = static_cast<int>(view(singles[i]).slot_positions.size());
    std::size_t j = i + 1;
    for (; j < singles.size() && grp.n_rows < max_cascade; ++j) {
      const int shared = shared_leading_slots(view(singles[i]), view(singles[j]), bs);
      if (shared == 0) break;
      grp.shared_slots = std::min(grp.shared_slots, shared);
      grp.rows[grp.n_rows++] = singles[j];
    }
    groups.push_back(grp);
    i = j;
  }
}

}  // namespace clm
