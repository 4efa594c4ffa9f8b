// Greedy pair merging, the core that SentencePiece-style and GPT-2 BPE
// tokenizers share: starting from the characters of a text, repeatedly merge
// the adjacent pair with the best priority (ties: the leftmost) until no
// adjacent pair may merge. The two flavours differ only in the priority.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace clm {

struct PieceSpan {
  std::size_t start = 0;
  std::size_t len = 0;
};

// priority(left, right): nullopt if the adjacent pieces may not merge, else a
// value where larger merges first. left and right are adjacent views into
// `text`. Returns the final pieces in order.
using MergePriority = std::function<std::optional<double>(std::string_view left, std::string_view right)>;
std::vector<PieceSpan> merge_pairs(std::string_view text, const MergePriority& priority);

}  // namespace clm
