// Rule files: a splitter's rules and options as JSON, so that a deployment
// can type its own prompts without rebuilding:
//   {"min_block_length": 8, "default_rules": false,
//    "rules": [{"pattern": "...", "type": "question", "min_length": 0}, ...]}
// Only "rules" is required. The file's rules replace the defaults, unless
// "default_rules" is true: then the defaults follow the file's rules (which
// therefore win ties). Every error names what is wrong, and for a rule, its
// index in "rules"; unknown keys are errors too, so a typo is not ignored.
#pragma once

#include <string>
#include <string_view>

#include "text/semantic_splitter.h"
#include "util/error.h"

namespace clm {

inline constexpr std::size_t kMaxRuleFileBytes = 1 << 20;

// `base` supplies the options the file does not set.
Result<SemanticSplitter> parse_split_rules(std::string_view json_text, SplitterOptions base = {});
// Reads `path` (at most kMaxRuleFileBytes) and parses it; errors start with the path.
Result<SemanticSplitter> load_split_rules(const std::string& path, SplitterOptions base = {});

}  // namespace clm
