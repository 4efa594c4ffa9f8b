// The f32 exp of attention's softmax, written once here as the scalar
// reference; the SIMD paths perform the same operations lane-wise.
//
// Algorithm: clamp x to [-110, 89] (beyond, exp is 0 or inf in f32 anyway,
// and the clamp keeps n small), n = nearest integer to x * log2(e) (ties to
// even), r = x - n * ln2 in two fma steps with ln2 split into a short high
// part (n * hi is exact) and a low part, so |r| <= ln2 / 2 with no
// cancellation error; exp(r) by the degree-7 Taylor polynomial in Horner form
// (truncation error below 1e-8 relative, under a tenth of an f32 ulp); the
// result p * 2^n rounded once. Against the correctly rounded exp it is within
// 2 ulp for normal results; subnormal results are off by at most 1 unit of
// the subnormal spacing. NaN stays NaN, -inf gives +0, +inf gives inf.
#pragma once

#include <cmath>

namespace clm::attn_exp {

inline constexpr float kMin = -110.0f;  // exp(-110) < half the least subnormal: rounds to 0
inline constexpr float kMax = 89.0f;    // exp(89) > FLT_MAX: overflows to inf
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693145751953125f;  // 15 significant bits: n * kLn2Hi is exact for |n| < 2^8
inline constexpr float kLn2Lo = 1.42860682030941723e-6f;
// 1/k! for k = 7 down to 0, the Horner order.
inline constexpr float kC7 = 1.0f / 5040.0f;
inline constexpr float kC6 = 1.0f / 720.0f;
inline constexpr float kC5 = 1.0f / 120.0f;
inline constexpr float kC4 = 1.0f / 24.0f;
inline constexpr float kC3 = 1.0f / 6.0f;
inline constexpr float kC2 = 0.5f;
inline constexpr float kC1 = 1.0f;
inline constexpr float kC0 = 1.0f;

inline float exp_ref(float x) {
  if (std::isnan(x)) return x;
  x = x < kMin ? kMin : x;
  x = x > kMax ? kMax : x;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kC7;
  p = std::fma(p, r, kC6);
  p = std::fma(p, r, kC5);
  p = std::fma(p, r, kC4);
  p = std::fma(p, r, kC3);
  p = std::fma(p, r, kC2);
  p = std::fma(p, r, kC1);
  p = std::fma(p, r, kC0);
  return std::ldexp(p, static_cast<int>(n));
}

}  // namespace clm::attn_exp
