#include "distribution_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace clm {
namespace {

std::vector<float> log_of(std::initializer_list<double> p) {
  std::vector<float> out;
  for (double x : p) out.push_back(static_cast<float>(std::log(x)));
  return out;
}

TEST(KlDivergence, IdenticalRowsGiveExactlyZero) {
  const std::vector<float> row = {-0.3f, -2.1f, -5.0f, -1.7f, -30.0f};
  EXPECT_EQ(kl_divergence(row, row), 0.0);
  const auto p = log_of({0.7, 0.2, 0.1});
  EXPECT_EQ(kl_divergence(p, p), 0.0);
}

TEST(KlDivergence, KnownPair) {
  // KL([.5 .5] || [.9 .1]) = .5 ln(.5/.9) + .5 ln(.5/.1)
  const double want = 0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1);
  EXPECT_NEAR(kl_divergence(log_of({0.5, 0.5}), log_of({0.9, 0.1})), want, 1e-7);
  // Not symmetric: KL([.9 .1] || [.5 .5]).
  const double back = 0.9 * std::log(0.9 / 0.5) + 0.1 * std::log(0.1 / 0.5);
  EXPECT_NEAR(kl_divergence(log_of({0.9, 0.1}), log_of({0.5, 0.5})), back, 1e-7);
}

TEST(KlDivergence, RowsAreRenormalized) {
  // Logits (unnormalized) give the same KL as their log-softmax.
  const std::vector<float> p = {1.0f, 1.0f};
  std::vector<float> q = log_of({0.9, 0.1});
  for (float& x : q) x += 3.5f;
  const double want = 0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1);
  EXPECT_NEAR(kl_divergence(p, q), want, 1e-6);
}

TEST(KlDivergence, MassWhereTheOtherHasNoneIsInfinite) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> p = {std::log(0.5f), std::log(0.5f)};
  const std::vector<float> q = {0.0f, -inf};
  EXPECT_TRUE(std::isinf(kl_divergence(p, q)));
  // The other way round a zero of p contributes nothing.
  EXPECT_NEAR(kl_divergence(q, p), std::log(2.0), 1e-7);
}

TEST(Argmax, TiesGoToTheLowestId) {
  EXPECT_EQ(argmax(std::vector<float>{-1.0f, -0.5f, -0.5f, -3.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-0.1f}), 0);
}

TEST(CommonPrefix, CountsLeadingEqualTokens) {
  const std::vector<int32_t> a = {5, 6, 7, 8}, b = {5, 6, 9, 8}, c = {5, 6};
  EXPECT_EQ(common_prefix_length(a, a), 4);
  EXPECT_EQ(common_prefix_length(a, b), 2);
  EXPECT_EQ(common_prefix_length(a, c), 2);
  EXPECT_EQ(common_prefix_length(std::vector<int32_t>{1}, std::vector<int32_t>{2}), 0);
  EXPECT_EQ(common_prefix_length(std::vector<int32_t>{}, a), 0);
}

TEST(KlSummary, MeanAndMaxOverMergedParts) {
  KlSummary a, b;
  a.add(1e-4);
  a.add(3e-4);
  b.add(2e-4);
  a.merge(b);
  EXPECT_EQ(a.count, 3);
  EXPECT_NEAR(a.mean(), 2e-4, 1e-12);
  EXPECT_EQ(a.max, 3e-4);
  EXPECT_EQ(KlSummary{}.mean(), 0.0);
}

}  // namespace
}  // namespace clm
