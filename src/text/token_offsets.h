// TokenOffsets: where each token of a prompt lies in its text. The tokens
// tile the text in order: token t covers bytes [start(t), start(t + 1)), the
// last one ends where the text ends, and a token that stands for no text
// (BOS, a control token the text does not spell) covers no bytes. This is
// what lets the splitter, which cuts bytes, answer in token positions.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace clm {

// Half-open ranges: [begin, end).
struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
  bool operator==(const ByteRange&) const = default;
};

struct TokenRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
  bool operator==(const TokenRange&) const = default;
};

class TokenOffsets {
 public:
  // Refuses starts that do not tile a text of `text_size` bytes: they must
  // be ascending, the first at 0, none past the end, and a non-empty text
  // needs at least one token.
  static Result<TokenOffsets> from_starts(std::vector<std::size_t> starts, std::size_t text_size);
  // One unit per UTF-8 character (an ill-formed byte is a unit of its own):
  // a tokenizer-free stand-in, so lengths count characters.
  static TokenOffsets per_character(std::string_view text);

  std::size_t size() const { return starts_.size(); }
  std::size_t text_size() const { return text_size_; }
  // The first byte of `token`; start(size()) is the end of the text.
  std::size_t start(std::size_t token) const { return token < starts_.size() ? starts_[token] : text_size_; }
  // The token whose bytes hold `byte` (a token covering no bytes never does);
  // size() at or past the end of the text. A cut at `byte` snaps back to the
  // start of this token.
  std::size_t token_at(std::size_t byte) const;
  // Tokens from the one holding range.begin up to the one holding range.end:
  // what a block cut at these bytes would hold.
  std::size_t count(ByteRange range) const { return token_at(range.end) - token_at(range.begin); }

 private:
  TokenOffsets(std::vector<std::size_t> starts, std::size_t text_size)
      : starts_(std::move(starts)), text_size_(text_size) {}

  std::vector<std::size_t> starts_;
  std::size_t text_size_ = 0;
};

}  // namespace clm
