// The AArch64 Advanced SIMD path of attn_kernels.h, for Neon and NeonDot
// alike (the dot-product instructions do not enter attention): the
// reference's sixteen lanes as four 4-lane registers (lanes 0-3, 4-7, 8-11,
// 12-15), so the arithmetic is lane for lane the same as the other paths'.
// vfmaq_f32 is the reference's fused fma; f16 converts exactly to f32 and
// back to nearest even (FPCR's default rounding, which Linux leaves set).
// Advanced SIMD is part of every AArch64 Linux CPU, so no target region.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attn_exp.h"
#include "kernels/attn_kernels.h"
#include "kernels/kv_row_codec.h"
#include "util/half.h"

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;
constexpr std::size_t kWidth = 4;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Stored rows need not be aligned for float access, so they are read as bytes.
inline float32x4_t load_f32x4(const std::byte* p) { return vreinterpretq_f32_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(p))); }
inline float32x4_t load_f16x4(const std::byte* p) {
  return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(reinterpret_cast<const uint8_t*>(p))));
}

// One f16 by the conversion instruction: exactly f16_to_f32, without its
// branches.
inline float f16_bits_to_f32(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// Elements i..i+3 of a stored row as f32 (vec), element i alone (one), and
// where wider loads pay, i..i+15 (chunk, attn_score_kernel.h).
struct LoadF32 {
  static float32x4_t vec(const std::byte* p, std::size_t i) { return load_f32x4(p + 4 * i); }
  static float one(const std::byte* p, std::size_t i) { return read_f32_element(p + 4 * i); }
};
struct LoadF16 {
  static float32x4_t vec(const std::byte* p, std::size_t i) { return load_f16x4(p + 2 * i); }
  static void chunk(const std::byte* p, std::size_t i, float32x4_t* v) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(p + 2 * i);
    const float16x8_t lo = vreinterpretq_f16_u8(vld1q_u8(b));
    const float16x8_t hi = vreinterpretq_f16_u8(vld1q_u8(b + 16));
    v[0] = vcvt_f32_f16(vget_low_f16(lo));
    v[1] = vcvt_high_f32_f16(lo);
    v[2] = vcvt_f32_f16(vget_low_f16(hi));
    v[3] = vcvt_high_f32_f16(hi);
  }
  static float one(const std::byte* p, std::size_t i) { return f16_bits_to_f32(p + 2 * i); }
};
// Sixteen quants of one group times its scale d, as four f32 registers: each
// product exact (an f16 scale times a small integer fits f32).
inline void scaled_chunk(int8x16_t q, float d, float32x4_t* v) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(q));
  const int16x8_t hi = vmovl_high_s8(q);
  v[0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d);
  v[1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d);
  v[2] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d);
  v[3] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d);
}

// i is a multiple of 4 (of 16 for chunk), so the values share one group
// (kv_row_codec.h) and d * q is exact: the floats read_q8_0_element gives.
struct LoadQ8 {
  static float scale(const std::byte* p, std::size_t i) { return f16_bits_to_f32(p + q8_scale_offset(i)); }
  static float32x4_t vec(const std::byte* p, std::size_t i) {
    int32_t four;  // exactly the four values: a wider load could pass the row's end
    std::memcpy(&four, p + q8_value_offset(i), 4);
    const int16x8_t q = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
    return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), scale(p, i));
  }
  static void chunk(const std::byte* p, std::size_t i, float32x4_t* v) {
    const int8x16_t q = vld1q_s8(reinterpret_cast<const int8_t*>(p + q8_value_offset(i)));
    scaled_chunk(q, scale(p, i), v);
  }
  static float one(const std::byte* p, std::size_t i) {
    int8_t q;
    std::memcpy(&q, p + q8_value_offset(i), 1);
    return scale(p, i) * static_cast<float>(q);
  }
};

// The same for q4_0: the values are whole bytes of one group (two for vec,
// eight for chunk, read exactly: a wider load could pass the row's end),
// their nibbles zipped back into element order (low, high, low, ...).
struct LoadQ4 {
  static float scale(const std::byte* p, std::size_t i) { return f16_bits_to_f32(p + q4_scale_offset(i)); }
  // Bytes b as 2 * 8 nibbles in element order, each q = nibble - 8.
  static int8x16_t nibbles(uint8x8_t b) {
    const uint8x8_t lo = vand_u8(b, vdup_n_u8(0x0F));
    const uint8x8_t hi = vshr_n_u8(b, 4);
    const uint8x16_t n = vcombine_u8(vzip1_u8(lo, hi), vzip2_u8(lo, hi));
    return vsubq_s8(vreinterpretq_s8_u8(n), vdupq_n_s8(8));
  }
  static float32x4_t vec(const std::byte* p, std::size_t i) {
    uint16_t two;
    std::memcpy(&two, p + q4_byte_offset(i), 2);
    const int16x8_t q = vmovl_s8(vget_low_s8(nibbles(vreinterpret_u8_u16(vdup_n_u16(two)))));
    return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), scale(p, i));
  }
  static void chunk(const std::byte* p, std::size_t i, float32x4_t* v) {
    const int8x16_t q = nibbles(vld1_u8(reinterpret_cast<const uint8_t*>(p + q4_byte_offset(i))));
    scaled_chunk(q, scale(p, i), v);
  }
  static float one(const std::byte* p, std::size_t i) { return scale(p, i) * static_cast<float>(q4_value(p, i)); }
};

// fp8: E4M3 bytes widened to f16 bit patterns, the sign to bit 15 and the
// other seven bits to bits 14..7; that f16 is the byte's value times 2^-8
// exactly (subnormals too), so the conversion is exact and one product with
// the row's 2^(e + 8) gives read_fp8_element's floats.
struct LoadFp8 {
  static float16x8_t halves(uint16x8_t x) {
    const uint16x8_t sign = vshlq_n_u16(vandq_u16(x, vdupq_n_u16(0x80)), 8);
    return vreinterpretq_f16_u16(vorrq_u16(sign, vshlq_n_u16(vandq_u16(x, vdupq_n_u16(0x7F)), 7)));
  }
  static float multiplier(const std::byte* p) { return fp8_row_scale(p) * 256.0f; }
  static float32x4_t vec(const std::byte* p, std::size_t i) {
    uint32_t four;  // exactly the four values: a wider load could pass the row's end
    std::memcpy(&four, p + fp8_value_offset(i), 4);
    const float16x8_t h = halves(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(four))));
    return vmulq_n_f32(vcvt_f32_f16(vget_low_f16(h)), multiplier(p));
  }
  static void chunk(const std::byte* p, std::size_t i, float32x4_t* v) {
    const uint8x16_t b = vld1q_u8(reinterpret_cast<const uint8_t*>(p + fp8_value_offset(i)));
    const float16x8_t lo = halves(vmovl_u8(vget_low_u8(b)));
    const float16x8_t hi = halves(vmovl_high_u8(b));
    const float d = multiplier(p);
    v[0] = vmulq_n_f32(vcvt_f32_f16(vget_low_f16(lo)), d);
    v[1] = vmulq_n_f32(vcvt_high_f32_f16(lo), d);
    v[2] = vmulq_n_f32(vcvt_f32_f16(vget_low_f16(hi)), d);
    v[3] = vmulq_n_f32(vcvt_high_f32_f16(hi), d);
  }
  static float one(const std::byte* p, std::size_t i) { return read_fp8_element(p, i); }
};

// 2^n for integral n in [-126, 127], built in the exponent field.
inline float32x4_t pow2(float32x4_t n) {
  const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
  return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
}

// attn_exp.h's algorithm on 4 lanes. FMAX/FMIN return NaN when either
// operand is NaN, so the clamps keep it, and every later step carries it
// through. vrndnq_f32 rounds to nearest even, as nearbyint does. p * 2^n
// as p * 2^(n/2) (exact: the product stays normal) times 2^(n - n/2): one
// rounding, as ldexp's.
inline float32x4_t exp4(float32x4_t x) {
  using namespace attn_exp;
  x = vmaxq_f32(x, vdupq_n_f32(kMin));
  x = vminq_f32(x, vdupq_n_f32(kMax));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, kLog2e));
  float32x4_t r = vfmaq_n_f32(x, n, -kLn2Hi);
  r = vfmaq_n_f32(r, n, -kLn2Lo);
  float32x4_t p = vdupq_n_f32(kC7);
  p = vfmaq_f32(vdupq_n_f32(kC6), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC5), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC4), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC3), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC2), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC1), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC0), p, r);
  const float32x4_t n1 = vrndq_f32(vmulq_n_f32(n, 0.5f));  // toward zero
  const float32x4_t n2 = vsubq_f32(n, n1);
  return vmulq_f32(vmulq_f32(p, pow2(n1)), pow2(n2));
}

void exp_row(const float* x, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) vst1q_f32(y + i, exp4(vld1q_f32(x + i)));
  if (i < n) {
    float buf[kWidth] = {};
    std::copy(x + i, x + n, buf);
    vst1q_f32(buf, exp4(vld1q_f32(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

// The reference's strict x > m, lane by lane: a NaN never replaces m (FMAX
// and FMAXNM would let one in).
inline float32x4_t max_step(float32x4_t m, float32x4_t x) { return vbslq_f32(vcgtq_f32(x, m), x, m); }

float max_row(const float* x, std::size_t n) {
  float32x4_t m0 = vdupq_n_f32(kNegInf), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    m0 = max_step(m0, vld1q_f32(x + i));
    m1 = max_step(m1, vld1q_f32(x + i + 4));
    m2 = max_step(m2, vld1q_f32(x + i + 8));
    m3 = max_step(m3, vld1q_f32(x + i + 12));
  }
  for (; i + kWidth <= n; i += kWidth) m0 = max_step(m0, vld1q_f32(x + i));
  float best = vmaxvq_f32(vmaxq_f32(vmaxq_f32(m0, m1), vmaxq_f32(m2, m3)));  // no NaN in any lane
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

// Sixteen elements into the eight double accumulators of lanes 0-1, 2-3,
// ..., 14-15.
inline void exp_sum_16(float* x, float32x4_t vmax, float64x2_t* acc) {
  for (std::size_t k = 0; k < 4; ++k) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + kWidth * k), vmax));
    vst1q_f32(x + kWidth * k, e);
    acc[2 * k] = vaddq_f64(acc[2 * k], vcvt_f64_f32(vget_low_f32(e)));
    acc[2 * k + 1] = vaddq_f64(acc[2 * k + 1], vcvt_high_f64_f32(e));
  }
}

double exp_sum_row(float* x, std::size_t n, float max) {
  const float32x4_t vmax = vdupq_n_f32(max);
  float64x2_t acc[8];
  for (auto& a : acc) a = vdupq_n_f64(0.0);
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) exp_sum_16(x + i, vmax, acc);
  if (i < n) {
    // Lanes past the end hold -inf: exp gives +0, which leaves a lane as it is.
    float buf[kLanes];
    std::fill(buf, buf + kLanes, kNegInf);
    std::copy(x + i, x + n, buf);
    exp_sum_16(buf, vmax, acc);
    std::copy(buf, buf + (n - i), x + i);
  }
  float64x2_t b[4];
  for (int k = 0; k < 4; ++k) b[k] = vaddq_f64(acc[k], acc[k + 4]);  // l + l+8
  const float64x2_t c0 = vaddq_f64(b[0], b[2]);                       // l + l+4
  const float64x2_t c1 = vaddq_f64(b[1], b[3]);
  const float64x2_t d = vaddq_f64(c0, c1);  // l + l+2
  return vgetq_lane_f64(d, 0) + vgetq_lane_f64(d, 1);
}

inline float32x4_t round_f16(float32x4_t x) { return vcvt_f32_f16(vcvt_f16_f32(x)); }

void scale_row(float* x, std::size_t n, float inv, bool round) {
  std::size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    const float32x4_t p = vmulq_n_f32(vld1q_f32(x + i), inv);
    vst1q_f32(x + i, round ? round_f16(p) : p);
  }
  for (; i < n; ++i) {
    const float p = x[i] * inv;
    x[i] = round ? f16_to_f32(f32_to_f16(p)) : p;
  }
}

// The lanes of attn_pv_kernel.h and attn_score_kernel.h: one register holds
// 4 of a row's elements.
struct AttnQ {
  using Reg = float32x4_t;
  static constexpr std::size_t kWidth = 4;
  static constexpr int kPvTile = 4;
  static constexpr int kPvAccumulators = 16;  // 4 queries x 16 dims, 4 broadcasts and a V vector of 32 registers
  static constexpr int kScoreTile = 4;        // 16 accumulators, 4 K registers and the query loads
  static Reg load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, Reg v) { vst1q_f32(p, v); }
  static Reg set1(float x) { return vdupq_n_f32(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static bool any_zero(Reg v) { return vmaxvq_u32(vceqzq_f32(v)) != 0; }
  // Lanes 0-3, 4-7, 8-11, 12-15 of one score: l + l+8, l + l+4, l + l+2, l + l+1.
  static float fold16(const Reg* a) {
    const float32x4_t c = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
    const float32x2_t d = vadd_f32(vget_low_f32(c), vget_high_f32(c));
    return vget_lane_f32(d, 0) + vget_lane_f32(d, 1);
  }
};

}  // namespace
}  // namespace clm

#include "kernels/attn_pv_kernel.h"
#include "kernels/attn_score_kernel.h"

namespace clm {
namespace {

void f32_to_f16_row(const float* x, std::byte* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + kWidth <= n; i += kWidth)
    vst1_u8(reinterpret_cast<uint8_t*>(dst + 2 * i), vreinterpret_u8_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <class Load>
constexpr KvRowKernels row_kernels() {
  return {.scores = scores<AttnQ, Load>, .pv = pv<AttnQ, Load>, .pv_queries = pv_queries<AttnQ, Load>};
}

}  // namespace

const AttnKernels& neon_attn_kernels() {
  static constexpr AttnKernels k{.exp_row = exp_row,
                                 .max_row = max_row,
                                 .exp_sum_row = exp_sum_row,
                                 .scale_row = scale_row,
                                 .rows_by_type = {row_kernels<LoadF16>(), row_kernels<LoadF32>(),
                                                  row_kernels<LoadQ8>(), row_kernels<LoadQ4>(),
                                                  row_kernels<LoadFp8>()},
                                 .f32_to_f16_row = f32_to_f16_row};
  return k;
}

}  // namespace clm
