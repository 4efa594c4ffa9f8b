#include "engine/blend_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clm {

namespace {

// How many of the tokens, most deviant first, hold kBlendAdaptiveMass of the
// total deviation, within the adaptive bounds.
std::size_t adaptive_count(std::span<const float> deviation, const std::vector<int32_t>& by_deviation) {
  const std::size_t n = deviation.size();
  double total = 0.0;
  for (float d : deviation) total += d;
  const auto lo = static_cast<std::size_t>(std::ceil(kBlendAdaptiveMin * static_cast<double>(n)));
  const auto hi = static_cast<std::size_t>(std::floor(kBlendAdaptiveMax * static_cast<double>(n)));
  std::size_t k = 0;
  double held = 0.0;
  while (k < n && held < kBlendAdaptiveMass * total) held += deviation[static_cast<std::size_t>(by_deviation[k++])];
  return std::clamp(k, std::min(lo, n), std::max(hi, std::min(lo, n)));
}

}  // namespace

std::vector<int32_t> select_for_recompute(std::span<const float> deviation, float ratio, bool adaptive) {
  const std::size_t n = deviation.size();
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return deviation[static_cast<std::size_t>(a)] > deviation[static_cast<std::size_t>(b)];
  });
  std::size_t k = 0;
  if (adaptive) {
    k = adaptive_count(deviation, order);
  } else {
    const double r = std::clamp(static_cast<double>(ratio), 0.0, 1.0);
    k = std::min(n, static_cast<std::size_t>(std::lround(r * static_cast<double>(n))));
  }
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<PromptRange> add_positions(const std::vector<PromptRange>& ranges, std::span<const int32_t> positions) {
  std::vector<PromptRange> all = ranges;
  for (int32_t p : positions) all.push_back({p, p + 1});
  std::sort(all.begin(), all.end(), [](const PromptRange& a, const PromptRange& b) { return a.begin < b.begin; });
  std::vector<PromptRange> out;
  for (const PromptRange& r : all) {
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace clm
