#include "distribution_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clm {

namespace {

double log_sum_exp(std::span<const float> x) {
  double hi = -std::numeric_limits<double>::infinity();
  for (float v : x) hi = std::max(hi, static_cast<double>(v));
  if (!std::isfinite(hi)) return hi;
  double s = 0.0;
  for (float v : x) s += std::exp(static_cast<double>(v) - hi);
  return hi + std::log(s);
}

}  // namespace

double kl_divergence(std::span<const float> log_p, std::span<const float> log_q) {
  const double zp = log_sum_exp(log_p);
  const double zq = log_sum_exp(log_q);
  double kl = 0.0;
  const std::size_t n = std::min(log_p.size(), log_q.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double lp = static_cast<double>(log_p[i]) - zp;
    if (!std::isfinite(lp)) continue;  // p gives this token no mass
    const double lq = static_cast<double>(log_q[i]) - zq;
    // Written as a difference of the raw values so that identical rows give
    // 0 exactly, whatever the normalizers' rounding.
    const double diff = (static_cast<double>(log_p[i]) - static_cast<double>(log_q[i])) - (zp - zq);
    if (!std::isfinite(lq)) return std::numeric_limits<double>::infinity();
    kl += std::exp(lp) * diff;
  }
  // Rounding can leave a tiny negative sum for near-identical rows; KL >= 0.
  return std::max(kl, 0.0);
}

int32_t argmax(std::span<const float> log_p) {
  int32_t best = 0;
  for (std::size_t i = 1; i < log_p.size(); ++i)
    if (log_p[i] > log_p[static_cast<std::size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

int common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

void KlSummary::add(double kl) {
  ++count;
  sum += kl;
  max = std::max(max, kl);
}

void KlSummary::merge(const KlSummary& other) {
  count += other.count;
  sum += other.sum;
  max = std::max(max, other.max);
}

}  // namespace clm
