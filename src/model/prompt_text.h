// PromptText: prompt text together with the byte ranges that are literal,
// where special-token text is not parsed. A chat prompt's control tokens
// must come from the template's own markup only; text a user typed into a
// message ("</s>", "<|im_end|>") is marked literal so it stays ordinary text.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace clm {

struct TextRange {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the last byte
  bool operator==(const TextRange&) const = default;
};

struct PromptText {
  std::string text;
  std::vector<TextRange> literal;  // sorted, disjoint, within text

  // Special-token text parsed everywhere, or nowhere.
  static PromptText parsed(std::string text) { return {std::move(text), {}}; }
  static PromptText all_literal(std::string text) {
    const std::size_t n = text.size();
    return {std::move(text), n == 0 ? std::vector<TextRange>{} : std::vector<TextRange>{{0, n}}};
  }
  // The text from byte `offset` on, with the literal ranges moved and
  // clipped to it.
  PromptText suffix(std::size_t offset) const;
  // Whether any literal range overlaps [begin, end).
  bool overlaps_literal(std::size_t begin, std::size_t end) const;
};

}  // namespace clm
