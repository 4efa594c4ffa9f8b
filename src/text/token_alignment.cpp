#include "text/token_alignment.h"

#include <utility>
#include <vector>

namespace clm {

namespace {

bool covers_no_text(TokenType type) {
  return type == TokenType::Control || type == TokenType::Unknown || type == TokenType::Unused;
}

}  // namespace

Result<TokenOffsets> align_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids, std::string_view text) {
  std::vector<std::size_t> starts;
  starts.reserve(ids.size());
  std::size_t pos = 0;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= tokenizer.n_vocab())
      return fail("token " + std::to_string(t) + " has id " + std::to_string(id) + ", outside the vocabulary");
    const std::string piece = tokenizer.token_to_piece(id, /*render_special=*/true);
    const std::string_view rest = text.substr(pos);
    starts.push_back(pos);
    if (rest.starts_with(piece)) {
      pos += piece.size();
    } else if (!piece.empty() && piece.front() == ' ' && rest.starts_with(std::string_view(piece).substr(1))) {
      pos += piece.size() - 1;  // a lone space prefix ("▁" by itself) covers nothing
    } else if (!covers_no_text(tokenizer.token_type(id))) {
      return fail("token " + std::to_string(t) + " (id " + std::to_string(id) + ") does not spell the text at byte " +
                  std::to_string(pos));
    }
  }
  if (pos != text.size())
    return fail("the tokens spell only the first " + std::to_string(pos) + " of " + std::to_string(text.size()) +
                " bytes of the text");
  return TokenOffsets::from_starts(std::move(starts), text.size());
}

SpelledTokens spell_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids) {
  std::string text;
  std::vector<std::size_t> starts;
  starts.reserve(ids.size());
  for (int32_t id : ids) {
    starts.push_back(text.size());
    text += tokenizer.token_to_piece(id, /*render_special=*/true);
  }
  const std::size_t size = text.size();
  // Starts taken while appending are ascending from 0 and within the text.
  return SpelledTokens{std::move(text), *TokenOffsets::from_starts(std::move(starts), size)};
}

}  // namespace clm
