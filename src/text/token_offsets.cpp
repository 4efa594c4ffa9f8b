#include "text/token_offsets.h"

#include <algorithm>
#include <string>

#include "model/utf8.h"

namespace clm {

Result<TokenOffsets> TokenOffsets::from_starts(std::vector<std::size_t> starts, std::size_t text_size) {
  if (starts.empty()) {
    if (text_size != 0) return fail("no tokens for a text of " + std::to_string(text_size) + " bytes");
    return TokenOffsets({}, 0);
  }
  if (starts.front() != 0) return fail("the first token starts at byte " + std::to_string(starts.front()) + ", not 0");
  for (std::size_t t = 1; t < starts.size(); ++t) {
    if (starts[t] < starts[t - 1])
      return fail("token " + std::to_string(t) + " starts before the token ahead of it");
  }
  if (starts.back() > text_size)
    return fail("token " + std::to_string(starts.size() - 1) + " starts past the end of the text");
  return TokenOffsets(std::move(starts), text_size);
}

TokenOffsets TokenOffsets::per_character(std::string_view text) {
  std::vector<std::size_t> starts;
  starts.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size(); pos += utf8_decode_at(text, pos).len) starts.push_back(pos);
  return TokenOffsets(std::move(starts), text.size());
}

std::size_t TokenOffsets::token_at(std::size_t byte) const {
  if (byte >= text_size_) return starts_.size();
  // The last token starting at or before `byte`; tokens covering no bytes
  // share their start with the token after them, so they are skipped.
  const auto after = std::upper_bound(starts_.begin(), starts_.end(), byte);
  return static_cast<std::size_t>(after - starts_.begin()) - 1;
}

}  // namespace clm
