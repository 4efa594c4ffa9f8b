#include "token_overlap.h"

#include <algorithm>

namespace clm {

namespace {

// Longest run of `prompt` starting at i that occurs anywhere in `other`.
int longest_run_at(std::span<const int32_t> prompt, std::size_t i, std::span<const int32_t> other) {
  int best = 0;
  for (std::size_t j = 0; j < other.size(); ++j) {
    if (other[j] != prompt[i]) continue;
    std::size_t k = 0;
    while (i + k < prompt.size() && j + k < other.size() && prompt[i + k] == other[j + k]) ++k;
    best = std::max(best, static_cast<int>(k));
  }
  return best;
}

}  // namespace

std::vector<bool> unchanged_tokens(std::span<const int32_t> prompt, std::span<const std::vector<int32_t>> earlier,
                                   int min_run) {
  std::vector<bool> marked(prompt.size(), false);
  if (prompt.empty()) return marked;
  std::size_t prefix = 0;
  for (const auto& e : earlier) {
    std::size_t k = 0;
    while (k < prompt.size() && k < e.size() && prompt[k] == e[k]) ++k;
    prefix = std::max(prefix, k);
  }
  for (std::size_t i = 0; i < prefix; ++i) marked[i] = true;
  for (std::size_t i = prefix; i < prompt.size();) {
    int run = 0;
    for (const auto& e : earlier) run = std::max(run, longest_run_at(prompt, i, e));
    if (run >= std::max(min_run, 1)) {
      for (std::size_t k = 0; k < static_cast<std::size_t>(run); ++k) marked[i + k] = true;
      i += static_cast<std::size_t>(run);
    } else {
      ++i;
    }
  }
  marked.back() = false;
  return marked;
}

}  // namespace clm
