#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "model/logprobs.h"

namespace clm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t resolve_seed(uint64_t seed) {
  if (seed != kRandomSeed) return seed;
  std::random_device rd;
  const uint64_t hi = rd();
  const uint64_t lo = rd();
  return (hi << 32) ^ lo;
}

// First index of the largest cleaned logit: ties and an all -inf row go to the
// lowest id.
int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  float best_value = clean_logit(logits[0]);
  for (size_t i = 1; i < logits.size(); ++i) {
    const float v = clean_logit(logits[i]);
    if (v > best_value) {
      best_value = v;
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

}  // namespace

Sampler::Sampler(SamplerParams params)
    : params_(params), seed_(resolve_seed(params.seed)), rng_(seed_) {}

double Sampler::next_uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> history) {
  const bool repeat_on = params_.repeat_penalty != 1.0f && params_.repeat_last_n != 0;
  const bool count_on = params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f;
  if ((!repeat_on && !count_on) || history.empty() || logits.empty()) return;

  const size_t n = logits.size();
  if (counts_.size() != n) {
    counts_.assign(n, 0);
    in_window_.assign(n, 0);
  }
  const size_t window = params_.repeat_last_n < 0
                            ? history.size()
                            : std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
  const size_t window_start = history.size() - window;

  touched_.clear();
  for (size_t i = 0; i < history.size(); ++i) {
    const int32_t t = history[i];
    if (t < 0 || static_cast<size_t>(t) >= n) continue;
    if (counts_[t] == 0) touched_.push_back(t);
    ++counts_[t];
    if (repeat_on && i >= window_start) in_window_[t] = 1;
  }

  // Each distinct token is penalized once; counts_ and in_window_ are
  // cleared on the way out so the next call starts from zeros without an
  // O(n_vocab) reset.
  for (int32_t t : touched_) {
    float l = logits[t];
    if (in_window_[t]) l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    if (count_on) {
      l -= static_cast<float>(counts_[t]) * params_.frequency_penalty + params_.presence_penalty;
    }
    logits[t] = l;
    counts_[t] = 0;
    in_window_[t] = 0;
  }
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  if (logits.empty()) return -1;
  apply_penalties(logits, history);

  // `!(t > 0)` also sends a NaN temperature to greedy.
  if (!(params_.temperature > 0.0f)) return argmax(logits);

  // Drawn up front so that every non-greedy call advances the generator by
  // exactly one step, whatever the filters leave.
  const double u = next_uniform();
  const size_t n = logits.size();

  candidates_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    candidates_[i] = Candidate{static_cast<int32_t>(i), clean_logit(logits[i]), 0.0};
  }
  // A strict total order, so partial_sort/sort give the same result on every
  // standard library.
  auto better = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };

  bool sorted = false;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    const auto k = static_cast<std::ptrdiff_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), better);
    candidates_.resize(static_cast<size_t>(k));
    sorted = true;
  }
  const bool top_p_on = params_.top_p < 1.0f;
  if (top_p_on && !sorted) {
    std::sort(candidates_.begin(), candidates_.end(), better);
    sorted = true;
  }

  float max_logit = kNegInf;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  if (max_logit == kNegInf) return argmax(logits);  // no token has any probability

  // Softmax numerators in double: (logit - max) / temperature may be far
  // beyond float range for huge logits or a tiny temperature, yet exp of it
  // is simply 0. Logits are finite or -inf here and the max is finite, so the
  // difference is never NaN; the max gets weight exp(0) = 1 exactly. -inf is
  // zero outright, as -inf * 0 would be NaN at an infinite temperature.
  const double inv_t = 1.0 / static_cast<double>(params_.temperature);
  const double max_d = static_cast<double>(max_logit);
  double total = 0.0;
  for (Candidate& c : candidates_) {
    c.weight = c.logit == kNegInf ? 0.0
                                  : std::exp((static_cast<double>(c.logit) - max_d) * inv_t);
    total += c.weight;
  }

  if (top_p_on) {
    // top_p is a float: a cumulative sum that rounds to it has reached it
    // (0.5 + 0.3 must satisfy top_p = 0.8f although 0.8f > 0.8).
    double cum = 0.0;
    size_t keep = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      cum += candidates_[i].weight;
      if (static_cast<float>(cum / total) >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    candidates_.resize(keep);
  }

  if (params_.min_p > 0.0f) {
    // p >= min_p * p_max is weight >= min_p, since the max has weight 1. The
    // threshold is capped at 1 so the top token always survives.
    const double threshold = std::min(1.0, static_cast<double>(params_.min_p));
    std::erase_if(candidates_, [&](const Candidate& c) { return c.weight < threshold; });
  }

  total = 0.0;
  for (const Candidate& c : candidates_) total += c.weight;
  const double target = u * total;
  double cum = 0.0;
  for (const Candidate& c : candidates_) {
    cum += c.weight;
    if (target < cum) return c.id;
  }
  // Rounding left target at the very top: the last token with any weight.
  for (auto it = candidates_.rbegin(); it != candidates_.rend(); ++it) {
    if (it->weight > 0.0) return it->id;
  }
  return candidates_.front().id;
}

}  // namespace clm
