// Helpers for the splitter tests: blocks shown as (type, text) pairs, and the
// coverage promise checked on any split.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/semantic_splitter.h"

namespace clm::test {

using TypedText = std::pair<std::string, std::string>;

inline std::vector<TypedText> typed_texts(const std::vector<SemanticBlock>& blocks, std::string_view text) {
  std::vector<TypedText> out;
  for (const SemanticBlock& b : blocks)
    out.emplace_back(std::string(to_string(b.type)), std::string(text.substr(b.bytes.begin, b.bytes.size())));
  return out;
}

// The blocks tile the text and the tokens, in order, each token range
// holding exactly the bytes of its byte range.
inline void expect_tiling(const std::vector<SemanticBlock>& blocks, std::string_view text,
                          const TokenOffsets& tokens) {
  std::size_t byte = 0, token = 0;
  for (const SemanticBlock& b : blocks) {
    EXPECT_EQ(b.bytes.begin, byte);
    EXPECT_EQ(b.tokens.begin, token);
    EXPECT_LT(b.tokens.begin, b.tokens.end) << "a block without tokens";
    EXPECT_EQ(b.bytes.begin, tokens.start(b.tokens.begin));
    EXPECT_EQ(b.bytes.end, tokens.start(b.tokens.end));
    byte = b.bytes.end;
    token = b.tokens.end;
  }
  EXPECT_EQ(byte, text.size());
  EXPECT_EQ(token, tokens.size());
}

// Splits with one token per character and checks the tiling.
inline std::vector<SemanticBlock> split_chars(const SemanticSplitter& splitter, std::string_view text) {
  const TokenOffsets tokens = TokenOffsets::per_character(text);
  auto blocks = splitter.split(text, tokens);
  EXPECT_TRUE(blocks.has_value()) << blocks.error().message;
  if (!blocks) return {};
  expect_tiling(*blocks, text, tokens);
  return *blocks;
}

// The text of every block of `type`.
inline std::vector<std::string> texts_of(const std::vector<SemanticBlock>& blocks, std::string_view text,
                                         BlockType type) {
  std::vector<std::string> out;
  for (const SemanticBlock& b : blocks)
    if (b.type == type) out.emplace_back(text.substr(b.bytes.begin, b.bytes.size()));
  return out;
}

}  // namespace clm::test
