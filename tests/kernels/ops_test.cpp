#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"

namespace clm {
namespace {

TEST(Ops, RmsnormMatchesDouble) {
  for (int n : {1, 7, 64, 4099}) {
    const auto x = test::random_floats(static_cast<std::size_t>(n), 1, -3.0f, 3.0f);
    const auto w = test::random_floats(static_cast<std::size_t>(n), 2, 0.5f, 1.5f);
    std::vector<float> out(static_cast<std::size_t>(n));
    rmsnorm(x.data(), w.data(), n, 1e-5f, out.data());
    double ss = 0.0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(out[i], x[i] * scale * w[i], 1e-6 * std::fabs(x[i] * scale * w[i]) + 1e-7);
  }
}

TEST(Ops, RmsnormMayWorkInPlace) {
  auto x = test::random_floats(33, 3);
  const auto w = test::random_floats(33, 4);
  std::vector<float> out(33);
  rmsnorm(x.data(), w.data(), 33, 1e-6f, out.data());
  rmsnorm(x.data(), w.data(), 33, 1e-6f, x.data());
  EXPECT_EQ(x, out);
}

// The angle as ops.h specifies it (float, repeated multiplication), so that
// the rotation itself can be checked in double to 1e-5.
std::vector<double> float_angles(int n_rot, int pos, float base, const float* factors) {
  const float scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  std::vector<double> out;
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    out.push_back(factors ? theta / factors[i] : theta);
    theta *= scale;
  }
  return out;
}

void expect_rope_matches(bool neox, bool with_factors, int head_dim, int n_rot, int pos) {
  const int n_heads = 3;
  const float base = 10000.0f;
  const auto x = test::random_floats(static_cast<std::size_t>(n_heads) * head_dim, 9);
  const auto factors = test::random_floats(static_cast<std::size_t>(n_rot / 2), 10, 1.0f, 8.0f);
  const float* ff = with_factors ? factors.data() : nullptr;
  auto y = x;
  rope(y.data(), n_heads, head_dim, n_rot, pos, base, ff, neox);

  const auto angles = float_angles(n_rot, pos, base, ff);
  for (int h = 0; h < n_heads; ++h) {
    const float* xv = x.data() + h * head_dim;
    const float* yv = y.data() + h * head_dim;
    for (int i = 0; i < n_rot / 2; ++i) {
      const int a = neox ? i : 2 * i;
      const int b = neox ? i + n_rot / 2 : 2 * i + 1;
      // The float angle is within (i + 2) roundings of the exact one.
      const double exact = pos * std::pow(static_cast<double>(base), -2.0 * i / n_rot) / (ff ? ff[i] : 1.0f);
      EXPECT_NEAR(angles[static_cast<std::size_t>(i)], exact, exact * (i + 2) * 0x1p-23);
      const double c = std::cos(angles[static_cast<std::size_t>(i)]);
      const double s = std::sin(angles[static_cast<std::size_t>(i)]);
      const double ra = xv[a] * c - static_cast<double>(xv[b]) * s;
      const double rb = xv[a] * s + static_cast<double>(xv[b]) * c;
      const double mag = std::hypot(xv[a], xv[b]);
      ASSERT_NEAR(yv[a], ra, 1e-5 * mag) << "neox=" << neox << " pos=" << pos << " i=" << i;
      ASSERT_NEAR(yv[b], rb, 1e-5 * mag) << "neox=" << neox << " pos=" << pos << " i=" << i;
    }
    for (int d = n_rot; d < head_dim; ++d) EXPECT_EQ(yv[d], xv[d]) << "dims past n_rot are untouched";
  }
}

TEST(Ops, RopeRotatesBothLayoutsLikeTheDoubleReference) {
  for (bool neox : {false, true})
    for (bool factors : {false, true})
      for (int pos : {1, 7, 100, 4095}) {
        expect_rope_matches(neox, factors, 64, 64, pos);
        expect_rope_matches(neox, factors, 80, 32, pos);  // partial rotary
      }
}

TEST(Ops, RopePairsTheRightElements) {
  // Only element 1 is set: adjacent layout pairs it with 0, neox with 1 + n_rot/2.
  for (bool neox : {false, true}) {
    std::vector<float> v(8, 0.0f);
    v[1] = 1.0f;
    rope(v.data(), 1, 8, 8, 1, 10000.0f, nullptr, neox);
    const int partner = neox ? 1 + 4 : 0;
    for (int d = 0; d < 8; ++d) {
      if (d == 1 || d == partner) EXPECT_NE(v[static_cast<std::size_t>(d)], 0.0f) << d;
      else EXPECT_EQ(v[static_cast<std::size_t>(d)], 0.0f) << d;
    }
  }
}

TEST(Ops, RopeAtPositionZeroIsIdentity) {
  const auto x = test::random_floats(4 * 64, 11);
  const auto factors = test::random_floats(32, 12, 1.0f, 4.0f);
  for (bool neox : {false, true}) {
    auto y = x;
    rope(y.data(), 4, 64, 64, 0, 500000.0f, factors.data(), neox);
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
  }
}

TEST(Ops, SiluMulSoftmaxAndBias) {
  const auto g = test::random_floats(50, 13, -8.0f, 8.0f);
  const auto u = test::random_floats(50, 14);
  auto y = g;
  silu_mul(y.data(), u.data(), 50);
  for (int i = 0; i < 50; ++i) {
    const double e = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
    EXPECT_NEAR(y[i], e, 1e-6 * (1.0 + std::fabs(e)));
  }

  auto s = test::random_floats(37, 15, -50.0f, 50.0f);
  s[3] = 1000.0f;  // would overflow exp without the max subtraction
  const auto s0 = s;
  softmax(s.data(), 37);
  double denom = 0.0;
  for (float v : s0) denom += std::exp(static_cast<double>(v) - 1000.0);
  double total = 0.0;
  for (int i = 0; i < 37; ++i) {
    EXPECT_NEAR(s[i], std::exp(static_cast<double>(s0[i]) - 1000.0) / denom, 1e-6);
    total += s[i];
  }
  EXPECT_NEAR(total, 1.0, 1e-6);

  std::vector<float> x{1.0f, 2.0f, 3.0f};
  const std::vector<float> b{0.5f, -2.0f, 0.25f};
  add_bias(x.data(), b.data(), 3);
  EXPECT_EQ(x, (std::vector<float>{1.5f, 0.0f, 3.25f}));
}

}  // namespace
}  // namespace clm
