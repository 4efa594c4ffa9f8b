// A split rules file (`--split-rules`) on arbitrary bytes; what parses is
// then used to split a short conversation, one token per character.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "text/split_rules_file.h"
#include "text/token_offsets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view rules(reinterpret_cast<const char*>(data), size);
  const auto splitter = clm::parse_split_rules(rules);
  if (!splitter) return 0;
  constexpr std::string_view text =
      "<|system|>Be brief.\n<|user|>Hi there. How are you?\n\n```py\nprint(1)\n```\n\n- a\n- b\n";
  (void)splitter->split(text, clm::TokenOffsets::per_character(text));
  return 0;
}
