// How far one next-token distribution is from another: KL divergence, top-1
// agreement, and the shared prefix of two greedy continuations. Pure
// functions on log-probability rows, so the reuse evaluation's arithmetic can
// be tested without a model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace clm {

// KL(p || q) in nats for two distributions given as log-probabilities over
// the same vocabulary. Each row is renormalized first (in double), so rows
// that are log-softmax outputs up to rounding compare fairly; identical rows
// give exactly 0. A token q gives no mass to but p does makes it infinite.
double kl_divergence(std::span<const float> log_p, std::span<const float> log_q);

// The most likely token; ties go to the lowest id (as the greedy sampler).
int32_t argmax(std::span<const float> log_p);

// How many leading tokens two sequences share.
int common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b);

// Streaming summary of per-position KL values.
struct KlSummary {
  int count = 0;
  double sum = 0.0;
  double max = 0.0;
  void add(double kl);
  void merge(const KlSummary& other);
  double mean() const { return count == 0 ? 0.0 : sum / count; }
};

}  // namespace clm
