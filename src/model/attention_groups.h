// How a batch's attention splits into work items when it is not split by
// head. Consecutive rows of one sequence (a prefill chunk) form groups of up
// to kMaxGroupQueries queries that read each K/V row once. Single rows of
// different sequences whose block tables start with the same blocks (decode
// steps of conversations over one system prompt) form cascades: the shared
// blocks are read once for up to max_cascade (<= kMaxCascadeQueries)
// sequences. Every query's
// result is bitwise the same in any grouping (attention.h), so grouping is a
// question of memory traffic only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/attention.h"
#include "model/batch.h"
#include "model/kv_view.h"

namespace clm {

struct AttentionGroup {
  uint32_t rows[kMaxCascadeQueries];  // batch rows, in the order their queries are taken
  int n_rows = 0;
  int shared_slots = 0;  // leading slots every row's sequence holds in the same blocks at the same positions
};

// Fills `groups`. Without cascades (when a sequence collects attention
// statistics, which are summed per group) the groups are exactly the runs of
// consecutive rows of one sequence, in batch order, as
// AttentionStatsCollector's units expect. Larger cascades read the shared
// K/V fewer times but leave fewer work items (groups times heads) to spread
// over threads, so the caller picks max_cascade (1..kMaxCascadeQueries).
void arrange_attention_groups(std::span<const BatchToken> rows, const KvView& kv, bool cascades,
                              std::vector<AttentionGroup>& groups, int max_cascade = kMaxGroupQueries);

// The leading slots two sequences share: whole blocks at the same addresses
// holding the same positions.
int shared_leading_slots(const KvSeqView& a, const KvSeqView& b, int block_size);

}  // namespace clm
