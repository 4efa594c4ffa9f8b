#include "model/logprobs.h"

#include <algorithm>
#include <cmath>

namespace clm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// log(sum(exp(logit))) in double. Subtracting the max first keeps every
// exponent <= 0, so huge logits neither overflow nor lose the sum.
double log_sum_exp(std::span<const float> logits) {
  double max = -std::numeric_limits<double>::infinity();
  for (float x : logits) max = std::max(max, static_cast<double>(clean_logit(x)));
  if (max == -std::numeric_limits<double>::infinity()) return max;
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(clean_logit(x)) - max);
  return max + std::log(sum);
}

float logprob_of(float logit, double lse) {
  if (lse == -std::numeric_limits<double>::infinity()) return kNegInf;
  return static_cast<float>(static_cast<double>(clean_logit(logit)) - lse);
}

}  // namespace

std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k) {
  const size_t n = logits.size();
  const size_t kk = k <= 0 ? 0 : std::min(n, static_cast<size_t>(k));
  std::vector<std::pair<int32_t, float>> out;
  if (kk == 0) return out;

  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(i);
  // A strict total order (value, then id), so the selection is the same on
  // every standard library.
  auto better = [&](int32_t a, int32_t b) {
    const float la = clean_logit(logits[a]);
    const float lb = clean_logit(logits[b]);
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(kk), ids.end(), better);

  const double lse = log_sum_exp(logits);
  out.reserve(kk);
  for (size_t i = 0; i < kk; ++i) out.emplace_back(ids[i], logprob_of(logits[ids[i]], lse));
  return out;
}

float token_logprob(std::span<const float> logits, int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) return kNegInf;
  return logprob_of(logits[token], log_sum_exp(logits));
}

}  // namespace clm
