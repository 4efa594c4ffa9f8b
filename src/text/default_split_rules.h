// The rules a splitter uses when no rule file is given, in precedence order
// (on matches starting at the same byte the earlier rule wins). They cover
// English and Chinese prompts; the README lists them with examples, and
// tests/text/default_split_rules_test.cpp checks each in both languages.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "text/block_type.h"

namespace clm {

struct DefaultSplitRule {
  std::string_view name;  // for listings and test names
  std::string_view pattern;
  BlockType type;
  std::size_t min_length;  // tokens; 0 = any
};

std::span<const DefaultSplitRule> default_split_rules();

}  // namespace clm
