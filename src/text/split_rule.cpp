#include "text/split_rule.h"

namespace clm {

Result<SplitRule> compile_split_rule(std::string_view pattern, BlockType type, std::size_t min_length) {
  if (pattern.empty()) return fail("empty pattern");
  if (pattern.size() > kMaxPatternBytes)
    return fail("pattern of " + std::to_string(pattern.size()) + " bytes; at most " +
                std::to_string(kMaxPatternBytes) + " are allowed");
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error comes back to the caller instead of stderr
  options.set_max_mem(kMaxRuleMemory);
  auto re = std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) return fail("bad pattern '" + std::string(pattern) + "': " + re->error());
  return SplitRule{std::move(re), type, min_length};
}

}  // namespace clm
