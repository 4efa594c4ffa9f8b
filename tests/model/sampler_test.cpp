#include "model/sampler.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "model/logprobs.h"

namespace clm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Parameters with every filter off: temperature 1 draws straight from softmax.
SamplerParams plain(uint64_t seed = 1234) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

SamplerParams greedy_params() {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  return p;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double max = -std::numeric_limits<double>::infinity();
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp((static_cast<double>(logits[i]) - max) / temperature);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Counts how often each id comes out of n draws; every id must be in range.
std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int n,
                           std::span<const int32_t> history = {}) {
  std::vector<int> counts(logits.size(), 0);
  std::vector<float> row;
  for (int i = 0; i < n; ++i) {
    row = logits;  // sample() may modify its input
    const int32_t t = s.sample(row, history);
    EXPECT_GE(t, 0);
    EXPECT_LT(static_cast<size_t>(t), logits.size());
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) ++counts[t];
  }
  return counts;
}

// Pearson's statistic of observed counts against expected probabilities.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs) {
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double chi = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = n * probs[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

// 4 degrees of freedom: P(chi2 > 25) is about 5e-5, while a wrong
// distribution over 200k draws scores in the hundreds or more.
constexpr double kChi2Bound4Dof = 25.0;

TEST(Sampler, GreedyPicksArgmax) {
  Sampler s(greedy_params());
  std::vector<float> logits = {0.1f, 2.5f, -1.0f, 2.4f, 0.0f};
  EXPECT_EQ(s.sample(logits, {}), 1);
}

TEST(Sampler, GreedyTiesGoToLowestId) {
  Sampler s(greedy_params());
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f, 3.0f};
  EXPECT_EQ(s.sample(logits, {}), 1);
  std::vector<float> negative = {-5.0f, -2.0f, -2.0f};
  EXPECT_EQ(s.sample(negative, {}), 1);
}

TEST(Sampler, NegativeTemperatureIsGreedy) {
  SamplerParams p = plain();
  p.temperature = -1.0f;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> logits = {1.0f, 1.2f, 1.1f};
    EXPECT_EQ(s.sample(logits, {}), 1);
  }
}

TEST(Sampler, SameSeedSameSequence) {
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  Sampler a(plain(42));
  Sampler b(plain(42));
  Sampler c(plain(43));
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 1000; ++i) {
    std::vector<float> r1 = logits, r2 = logits, r3 = logits;
    sa.push_back(a.sample(r1, {}));
    sb.push_back(b.sample(r2, {}));
    sc.push_back(c.sample(r3, {}));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
  EXPECT_EQ(a.seed(), 42u);
}

TEST(Sampler, DefaultSeedIsRandom) {
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  SamplerParams p = plain(kRandomSeed);
  Sampler a(p);
  Sampler b(p);
  EXPECT_NE(a.seed(), b.seed());
  std::vector<int32_t> sa, sb;
  for (int i = 0; i < 1000; ++i) {
    std::vector<float> r1 = logits, r2 = logits;
    sa.push_back(a.sample(r1, {}));
    sb.push_back(b.sample(r2, {}));
  }
  EXPECT_NE(sa, sb);
}

TEST(Sampler, TemperatureOneMatchesSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  Sampler s(plain(7));
  const auto counts = histogram(s, logits, 200000);
  EXPECT_LT(chi_square(counts, softmax(logits, 1.0)), kChi2Bound4Dof);
}

TEST(Sampler, TemperatureScalesLogits) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  SamplerParams p = plain(8);
  p.temperature = 2.0f;
  Sampler s(p);
  const auto counts = histogram(s, logits, 200000);
  EXPECT_LT(chi_square(counts, softmax(logits, 2.0)), kChi2Bound4Dof);
  // The untempered distribution must be rejected: the test has teeth.
  EXPECT_GT(chi_square(counts, softmax(logits, 1.0)), 1000.0);
}

TEST(Sampler, TopKRenormalizesOverTheK) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  SamplerParams p = plain(9);
  p.top_k = 3;
  Sampler s(p);
  const auto counts = histogram(s, logits, 100000);
  EXPECT_EQ(counts[2], 0);
  EXPECT_EQ(counts[4], 0);
  const std::vector<float> kept = {1.0f, 0.5f, 2.0f};
  const auto pk = softmax(kept, 1.0);
  // 2 degrees of freedom: P(chi2 > 20) is about 5e-5.
  EXPECT_LT(chi_square({counts[0], counts[1], counts[3]}, pk), 20.0);
}

TEST(Sampler, TopKOneEqualsGreedy) {
  SamplerParams p = plain(11);
  p.top_k = 1;
  Sampler s(p);
  Sampler g(greedy_params());
  for (int i = 0; i < 1000; ++i) {
    // A different row every time, with frequent ties.
    std::vector<float> row(6);
    for (int j = 0; j < 6; ++j) row[j] = static_cast<float>((i * 7 + j * 13) % 5);
    std::vector<float> r1 = row, r2 = row;
    EXPECT_EQ(s.sample(r1, {}), g.sample(r2, {})) << "row " << i;
  }
}

TEST(Sampler, TopPKeepsExactlyTheNucleus) {
  const std::vector<float> logits = log_of({0.5, 0.3, 0.15, 0.05});
  SamplerParams p = plain(12);
  p.top_p = 0.8f;
  Sampler s(p);
  const auto counts = histogram(s, logits, 50000);
  EXPECT_EQ(counts[2], 0);
  EXPECT_EQ(counts[3], 0);
  // Renormalized over the nucleus: 0.5 / 0.8 = 0.625.
  EXPECT_NEAR(counts[0] / 50000.0, 0.625, 0.01);

  p.top_p = 0.81f;
  Sampler wider(p);
  const auto wide_counts = histogram(wider, logits, 50000);
  EXPECT_GT(wide_counts[2], 0);
  EXPECT_EQ(wide_counts[3], 0);
}

TEST(Sampler, TopPZeroKeepsOnlyTheTop) {
  const std::vector<float> logits = log_of({0.2, 0.5, 0.3});
  SamplerParams p = plain(13);
  p.top_p = 0.0f;
  Sampler s(p);
  const auto counts = histogram(s, logits, 1000);
  EXPECT_EQ(counts[1], 1000);
}

TEST(Sampler, TopPSeesTemperedProbabilities) {
  // At temperature 2 the probabilities become ~0.379, 0.293, 0.208, 0.120,
  // so a 0.8 nucleus needs three tokens instead of two.
  const std::vector<float> logits = log_of({0.5, 0.3, 0.15, 0.05});
  SamplerParams p = plain(14);
  p.top_p = 0.8f;
  p.temperature = 2.0f;
  Sampler s(p);
  const auto counts = histogram(s, logits, 50000);
  EXPECT_GT(counts[2], 0);
  EXPECT_EQ(counts[3], 0);
}

TEST(Sampler, MinPExcludesLowTokens) {
  const std::vector<float> logits = log_of({0.6, 0.3, 0.08, 0.02});
  SamplerParams p = plain(15);
  p.min_p = 0.1f;  // threshold 0.06
  Sampler s(p);
  auto counts = histogram(s, logits, 50000);
  EXPECT_GT(counts[2], 0);
  EXPECT_EQ(counts[3], 0);

  p.min_p = 0.2f;  // threshold 0.12
  Sampler tighter(p);
  counts = histogram(tighter, logits, 50000);
  EXPECT_GT(counts[1], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_EQ(counts[3], 0);
  EXPECT_NEAR(counts[0] / 50000.0, 0.6 / 0.9, 0.01);

  p.min_p = 5.0f;  // above 1: only the top token
  Sampler only_top(p);
  counts = histogram(only_top, logits, 1000);
  EXPECT_EQ(counts[0], 1000);
}

TEST(Sampler, RepeatPenaltyDividesPositiveMultipliesNegative) {
  SamplerParams p = greedy_params();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> logits = {2.0f, -1.0f, 3.0f, -4.0f, 0.0f};
  const std::vector<int32_t> history = {0, 1, 1, 4, 0};
  s.apply_penalties(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);   // seen twice, penalized once
  EXPECT_FLOAT_EQ(logits[1], -2.0f);
  EXPECT_FLOAT_EQ(logits[2], 3.0f);   // unseen
  EXPECT_FLOAT_EQ(logits[3], -4.0f);  // unseen
  EXPECT_FLOAT_EQ(logits[4], 0.0f);

  // A second call starts from clean state: the same history gives the same change.
  std::vector<float> again = {2.0f, -1.0f, 3.0f, -4.0f, 0.0f};
  s.apply_penalties(again, history);
  EXPECT_EQ(again, logits);
}

TEST(Sampler, RepeatPenaltyChangesTheGreedyChoice) {
  SamplerParams p = greedy_params();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  const std::vector<int32_t> history = {0};
  std::vector<float> positive = {2.0f, 1.5f, -1.0f};
  EXPECT_EQ(s.sample(positive, history), 1);
  std::vector<float> negative = {-1.0f, -1.5f, -3.0f};
  EXPECT_EQ(s.sample(negative, history), 1);
  std::vector<float> untouched = {-1.0f, -1.5f, -3.0f};
  EXPECT_EQ(s.sample(untouched, std::span<const int32_t>{}), 0);
}

TEST(Sampler, RepeatPenaltyWindow) {
  const std::vector<int32_t> history = {0, 1, 2};
  auto run = [&](int last_n) {
    SamplerParams p = greedy_params();
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = last_n;
    Sampler s(p);
    std::vector<float> logits = {4.0f, 4.0f, 4.0f, 4.0f};
    s.apply_penalties(logits, history);
    return logits;
  };
  EXPECT_EQ(run(2), (std::vector<float>{4.0f, 2.0f, 2.0f, 4.0f}));
  EXPECT_EQ(run(-1), (std::vector<float>{2.0f, 2.0f, 2.0f, 4.0f}));
  EXPECT_EQ(run(0), (std::vector<float>{4.0f, 4.0f, 4.0f, 4.0f}));
  EXPECT_EQ(run(100), (std::vector<float>{2.0f, 2.0f, 2.0f, 4.0f}));
}

TEST(Sampler, FrequencyAndPresencePenalties) {
  SamplerParams p = greedy_params();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.repeat_last_n = 1;  // the window governs only the repeat penalty
  Sampler s(p);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, -1.0f};
  const std::vector<int32_t> history = {0, 0, 0, 1, 3, 99, -5};  // out-of-range ids ignored
  s.apply_penalties(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.0f - 3 * 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[1], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f);
  EXPECT_FLOAT_EQ(logits[3], -1.0f - 0.5f - 0.25f);

  std::vector<float> row = {1.0f, 1.0f, 0.9f, -1.0f};
  EXPECT_EQ(s.sample(row, history), 2);
}

TEST(Sampler, TinyTemperatureBehavesLikeGreedy) {
  SamplerParams p = plain(16);
  p.temperature = 1e-6f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 1.0001f, 0.5f, -3.0f};
  const auto counts = histogram(s, logits, 1000);
  EXPECT_EQ(counts[1], 1000);
}

TEST(Sampler, AllNegativeInfinityButOne) {
  const std::vector<float> logits = {-kInf, -kInf, 3.0f, -kInf, -kInf};
  SamplerParams p = plain(17);
  Sampler s(p);
  EXPECT_EQ(histogram(s, logits, 1000)[2], 1000);
  Sampler defaults(SamplerParams{.seed = 18});
  EXPECT_EQ(histogram(defaults, logits, 1000)[2], 1000);
  p.top_p = 0.5f;
  Sampler nucleus(p);
  EXPECT_EQ(histogram(nucleus, logits, 1000)[2], 1000);
  Sampler g(greedy_params());
  EXPECT_EQ(histogram(g, logits, 10)[2], 10);
}

TEST(Sampler, AllNegativeInfinityReturnsLowestId) {
  const std::vector<float> logits = {-kInf, -kInf, -kInf};
  Sampler s(plain(19));
  EXPECT_EQ(histogram(s, logits, 10)[0], 10);
}

TEST(Sampler, HugeLogitsStayFinite) {
  const std::vector<float> logits = {-1e30f, 1e30f, 0.0f, 5e29f, -1e30f};
  for (float t : {1.0f, 1e-6f, 100.0f}) {
    SamplerParams p = plain(20);
    p.temperature = t;
    Sampler s(p);
    EXPECT_EQ(histogram(s, logits, 1000)[1], 1000) << "temperature " << t;
    SamplerParams d;
    d.temperature = t;
    d.seed = 21;
    Sampler defaults(d);
    EXPECT_EQ(histogram(defaults, logits, 1000)[1], 1000) << "temperature " << t;
  }
  // Two tokens tied at 1e30 share the mass evenly.
  const std::vector<float> tied = {1e30f, -1e30f, 1e30f};
  Sampler s(plain(22));
  const auto counts = histogram(s, tied, 20000);
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[0] / 20000.0, 0.5, 0.02);
}

TEST(Sampler, NanAndInfinityNeverBreakTheDraw) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Sampler s(plain(23));
  EXPECT_EQ(histogram(s, {nan, 1.0f, nan, 0.0f}, 2000)[0], 0);
  EXPECT_EQ(histogram(s, {nan, 1.0f, nan, 0.0f}, 2000)[2], 0);
  EXPECT_EQ(histogram(s, {0.0f, kInf, 1e30f}, 1000)[1], 1000);
  Sampler g(greedy_params());
  std::vector<float> row = {nan, 1.0f, 2.0f};
  EXPECT_EQ(g.sample(row, {}), 2);
}

TEST(Sampler, InfiniteTemperatureIsUniformOverPossibleTokens) {
  SamplerParams p = plain(24);
  p.temperature = kInf;
  Sampler s(p);
  const auto counts = histogram(s, {5.0f, -kInf, -3.0f, 0.0f}, 30000);
  EXPECT_EQ(counts[1], 0);
  for (int i : {0, 2, 3}) EXPECT_NEAR(counts[i] / 30000.0, 1.0 / 3.0, 0.02) << "id " << i;
}

TEST(Sampler, EmptyLogits) {
  Sampler s(plain());
  EXPECT_EQ(s.sample(std::span<float>{}, {}), -1);
}

TEST(Logprobs, MatchIndependentLogSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, 0.5f};
  const auto probs = softmax(logits, 1.0);
  const auto top = top_logprobs(logits, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 3);
  EXPECT_EQ(top[1].first, 0);
  EXPECT_EQ(top[2].first, 1);  // tie with id 5 goes to the lower id
  for (const auto& [id, lp] : top) {
    EXPECT_NEAR(lp, std::log(probs[id]), 1e-6) << "id " << id;
    EXPECT_NEAR(token_logprob(logits, id), lp, 1e-7);
  }

  const auto all = top_logprobs(logits, 100);  // k clamps to n_vocab
  ASSERT_EQ(all.size(), logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < all.size(); ++i) {
    sum += std::exp(static_cast<double>(all[i].second));
    if (i > 0) {
      EXPECT_GE(all[i - 1].second, all[i].second);
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_TRUE(top_logprobs(logits, 0).empty());
  EXPECT_TRUE(top_logprobs(logits, -3).empty());
}

TEST(Logprobs, HugeAndInfiniteLogits) {
  const std::vector<float> logits = {1e30f, -1e30f, 0.0f, -kInf};
  const auto top = top_logprobs(logits, 4);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].first, 0);
  EXPECT_FLOAT_EQ(top[0].second, 0.0f);
  for (const auto& [id, lp] : top) EXPECT_FALSE(std::isnan(lp)) << "id " << id;
  EXPECT_EQ(token_logprob(logits, 3), -kInf);
  EXPECT_EQ(token_logprob(logits, 4), -kInf);
  EXPECT_EQ(token_logprob(logits, -1), -kInf);

  // Large but ordinary logits: the log-sum-exp must not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(token_logprob(big, 0), std::log(0.5), 1e-6);
}

}  // namespace
}  // namespace clm
