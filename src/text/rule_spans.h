// Rule spans: where the rules' matches land in one stretch of text, with
// overlaps settled. Each rule is searched left to right over the stretch,
// its matches never overlapping each other (a global find-all). Among all
// rules' matches the earliest start wins; on a tie the rule listed first;
// then the longer match. A match that overlaps a chosen one loses the
// overlapped part and competes again from where the chosen one ends, if
// anything of it is left (and it is still as long as its rule asks): a
// header chosen at a line's start leaves the rest of the line to the rule
// that wanted the whole line.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "text/block_type.h"
#include "text/split_rule.h"
#include "text/token_offsets.h"

namespace clm {

struct TypedSpan {
  ByteRange bytes;
  BlockType type = BlockType::Context;
};

// The chosen spans inside `stretch` (byte offsets into `text`), in order and
// disjoint; the text between them is for the caller to type. Patterns see
// the stretch as their whole input: ^ and $ are its ends (and line ends
// under (?m)). `tokens` measures the rules' minimum lengths.
std::vector<TypedSpan> find_rule_spans(std::span<const SplitRule> rules, std::string_view text, ByteRange stretch,
                                       const TokenOffsets& tokens);

}  // namespace clm
