#include "text/turn_markup.h"

#include <re2/re2.h>

namespace clm {

namespace {

// Each marker takes the role name and line break that belong to it, so that
// the text of a turn starts with its content.
constexpr std::string_view kTurnMarkup =
    R"(<\|im_start\|>[^\n<]*\n?|<\|im_end\|>\n?)"                                  // ChatML
    R"(|<\|start_header_id\|>[^<\n]*<\|end_header_id\|>\n{0,2})"                   // Llama-3 header
    R"(|<\|(?:begin_of_text|end_of_text|eot_id|eom_id|endoftext|end)\|>\n?)"       // Llama-3, Phi ends
    R"(|<\|(?:system|user|assistant)\|>\n?)"                                       // Zephyr, Phi-3
    R"(|<start_of_turn>[^\n<]*\n?|<end_of_turn>\n?)"                               // Gemma
    R"(|<s>|[ \t]*</s>\n?)"                                                        // BOS / EOS as text
    R"(|\[INST\][ \t]*|[ \t]*\[/INST\][ \t]*|<<SYS>>\n?|\n?<</SYS>>\n*)"           // Llama-2
    R"(|(?m:^(?:User|Assistant):[ \t]?))";                                         // plain fallback

const re2::RE2& turn_markup_pattern() {
  static const re2::RE2 re(re2::StringPiece(kTurnMarkup.data(), kTurnMarkup.size()));
  return re;
}

bool only_whitespace(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

}  // namespace

std::vector<ByteRange> find_turn_markup(std::string_view text) {
  const re2::RE2& re = turn_markup_pattern();
  const re2::StringPiece input(text.data(), text.size());
  std::vector<ByteRange> regions;
  re2::StringPiece match;
  for (std::size_t pos = 0; pos < text.size();) {
    if (!re.Match(input, pos, text.size(), re2::RE2::UNANCHORED, &match, 1)) break;
    const auto begin = static_cast<std::size_t>(match.data() - text.data());
    const std::size_t end = begin + match.size();
    if (end == begin) {  // no marker is empty, but never loop on one
      pos = begin + 1;
      continue;
    }
    if (!regions.empty() && only_whitespace(text.substr(regions.back().end, begin - regions.back().end)))
      regions.back().end = end;
    else
      regions.push_back({begin, end});
    pos = end;
  }
  return regions;
}

}  // namespace clm
