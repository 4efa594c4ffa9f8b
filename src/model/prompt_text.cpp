#include "model/prompt_text.h"

#include <algorithm>

namespace clm {

PromptText PromptText::suffix(std::size_t offset) const {
  PromptText out;
  if (offset >= text.size()) return out;
  out.text = text.substr(offset);
  for (const TextRange& r : literal) {
    if (r.end <= offset) continue;
    out.literal.push_back({std::max(r.begin, offset) - offset, r.end - offset});
  }
  return out;
}

bool PromptText::overlaps_literal(std::size_t begin, std::size_t end) const {
  // Ranges are sorted: the first that ends after `begin` is the only candidate.
  auto it = std::upper_bound(literal.begin(), literal.end(), begin,
                             [](std::size_t at, const TextRange& r) { return at < r.end; });
  return it != literal.end() && it->begin < end;
}

}  // namespace clm
