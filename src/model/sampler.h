// The sampler turns one row of logits into the next token. It owns its random
// generator, so a fixed seed gives the same tokens on every platform and
// standard library; after the first call it reuses its buffers and does not
// allocate unless the vocabulary or history grows.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace clm {

// A seed equal to this draws a fresh one from std::random_device.
inline constexpr uint64_t kRandomSeed = 0xFFFFFFFFFFFFFFFFull;

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy (argmax; ties go to the lowest id)
  int top_k = 40;            // <= 0: disabled
  float top_p = 0.95f;       // >= 1: disabled; <= 0 keeps only the most likely token
  float min_p = 0.05f;       // <= 0: disabled; keeps tokens with p >= min_p * p_max
  // llama.cpp style: logit > 0 ? logit / pen : logit * pen, once per distinct
  // token among the last repeat_last_n tokens of the history.
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;          // 0: disabled, -1: the whole history
  float frequency_penalty = 0.0f;  // OpenAI: logit -= count * frequency_penalty
  float presence_penalty = 0.0f;   // OpenAI: logit -= (count > 0) * presence_penalty
  uint64_t seed = kRandomSeed;     // any other value: deterministic
};

// sample() runs these stages, in this order:
//   1. penalties on the raw logits of tokens in the history: repeat (within
//      the last repeat_last_n tokens), then frequency and presence (counts
//      over the whole history). Ids outside [0, n_vocab) are ignored.
//   2. temperature <= 0: argmax, ties to the lowest id; no random draw.
//   3. top_k: keep the k largest logits (ties to the lower id).
//   4. softmax of logit / temperature, in double.
//   5. top_p: sort by probability descending and keep the smallest prefix
//      whose cumulative probability reaches top_p (compared at float
//      precision, since top_p is a float); at least one token.
//   6. min_p: keep tokens with p >= min_p * p_max; at least the top one.
//   7. renormalize over the survivors and draw one token.
// Every non-greedy call consumes exactly one 64-bit output of the generator.
// NaN logits count as -inf and +inf as the largest float, so the result is
// always a valid id; if every logit is -inf the lowest id is returned.
class Sampler {
 public:
  explicit Sampler(SamplerParams params);

  // Picks the next token from logits (n_vocab entries, modified in place by
  // the penalties). history = the tokens seen so far in this sequence
  // (prompt + generated). Returns -1 only for an empty logits span.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);

  // Stage 1 alone, in place; sample() calls it. Public so that a caller can
  // report log-probabilities of the distribution actually sampled from.
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history);

  const SamplerParams& params() const { return params_; }
  // The seed the generator started from: params().seed, or the one drawn
  // from std::random_device, so that a random run can be reproduced.
  uint64_t seed() const { return seed_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
    double weight;  // unnormalized probability, exp((logit - max) / temperature)
  };

  // Uniform double in [0, 1) from the top 53 bits of one generator output;
  // std::uniform_real_distribution is implementation-defined, this is not.
  double next_uniform();

  SamplerParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // [n_vocab] at most
  std::vector<int32_t> counts_;        // [n_vocab] occurrences in history, zero between calls
  std::vector<uint8_t> in_window_;     // [n_vocab] seen in the repeat window, zero between calls
  std::vector<int32_t> touched_;       // distinct ids whose counts_/in_window_ are set
};

}  // namespace clm
