// SplitRule: a regular expression whose matches become blocks of one type.
// Patterns are RE2, which matches in time linear in the input whatever the
// pattern (no backtracking, so no catastrophic cases); compiling is bounded
// too: a pattern longer than kMaxPatternBytes, or one whose compiled form
// would need more than kMaxRuleMemory bytes, is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <re2/re2.h>

#include "text/block_type.h"
#include "util/error.h"

namespace clm {

struct SplitRule {
  std::shared_ptr<const re2::RE2> pattern;  // shared: a rule set is copied freely, the program is immutable
  BlockType type = BlockType::Context;
  // Matches shorter than this many tokens are not blocks of this rule (the
  // document rule: only a long passage is a document). 0: any length.
  std::size_t min_length = 0;
};

inline constexpr std::size_t kMaxPatternBytes = 4096;
// RE2's budget for the compiled program and its DFA caches (its default);
// past it compilation fails, and a search that fills the DFA cache falls
// back to RE2's NFA, slower but still linear.
inline constexpr int64_t kMaxRuleMemory = 8 << 20;

// Compiles `pattern` (RE2 syntax, UTF-8). A pattern that does not compile
// is refused with RE2's own explanation. Empty matches never make a block,
// so a pattern like "a*" is fine: only its non-empty matches count.
Result<SplitRule> compile_split_rule(std::string_view pattern, BlockType type, std::size_t min_length = 0);

}  // namespace clm
