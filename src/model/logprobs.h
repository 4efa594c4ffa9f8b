// Log-probabilities of a row of logits: log-softmax with the log-sum-exp taken
// in double, for the "logprobs" of a response. Results are a pure function of
// the logits; ties in ranking go to the lower token id.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace clm {

// How every logit consumer reads a value: NaN counts as -inf (never chosen)
// and +inf as the largest float, so that differences of logits stay defined.
inline float clean_logit(float x) {
  if (x != x) return -std::numeric_limits<float>::infinity();
  if (x == std::numeric_limits<float>::infinity()) return std::numeric_limits<float>::max();
  return x;
}

// The k most likely tokens (k clamped to [0, n_vocab]) with their log-softmax
// values, sorted by value descending, ties by lower id. If every logit is
// -inf there is no distribution and every value is -inf.
std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k);

// The log-softmax value of one token; -inf for an id outside [0, n_vocab).
float token_logprob(std::span<const float> logits, int32_t token);

}  // namespace clm
