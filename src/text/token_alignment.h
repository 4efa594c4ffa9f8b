// Token positions for prompt text: which bytes of a text each token of its
// encoding stands for, so that the splitter's byte cuts become token ranges.
// Two directions: align a text with the ids it was encoded into, or spell
// out ids (a prompt known only as tokens) as the text they stand for.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/tokenizer.h"
#include "text/token_offsets.h"
#include "util/error.h"

namespace clm {

// Walks `ids` along `text`: a token whose piece (special tokens rendered as
// their text) comes next in the text covers those bytes. Two mismatches are
// expected and allowed: a piece with a leading space where the text has none
// (the space prefix SentencePiece adds at the start and after each special
// token), which then covers the text without the space (nothing, for a lone
// space); and a control,
// unknown or unused token the text does not spell (BOS, EOS), which covers
// no bytes. Anything else fails, naming the token and the byte.
Result<TokenOffsets> align_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids, std::string_view text);

struct SpelledTokens {
  std::string text;  // the pieces in order, special tokens rendered as their text
  TokenOffsets offsets;
};
// The text `ids` stand for, with special tokens written out (so chat-template
// markers such as "<|im_start|>" are visible to the splitter) and every
// token covering exactly its piece.
SpelledTokens spell_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids);

}  // namespace clm
