// The Neon path of vec_dot.h: AArch64's Advanced SIMD, which every AArch64
// Linux CPU has, so this file needs no target region. Its integer dots
// widen byte products with smull and pair them with saddlp / sadalp; the
// NeonDot path (vec_dot_neon_dot.cpp) is this table with those through sdot.
//
// F16 weights are converted to f32 (fcvtl, exact) and multiplied in f32,
// never with the half-precision arithmetic some cores have (asimdhp): the
// F16 and BF16 weights promise one f32 fma chain per output from +0 on every
// path (vec_dot.h, PanelTileFn), which half-precision products and sums
// would break.
#include <arm_neon.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/element_read.h"
#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

namespace clm {

namespace {

// Rows have no alignment promise: weights are loaded as bytes.
inline float32x4_t load_f32x4(const std::byte* p) {
  return vreinterpretq_f32_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(p)));
}
inline uint16x4_t load_u16x4(const std::byte* p) {
  return vreinterpret_u16_u8(vld1_u8(reinterpret_cast<const uint8_t*>(p)));
}
inline float32x4_t f16x4_to_f32(const std::byte* p) { return vcvt_f32_f16(vreinterpret_f16_u16(load_u16x4(p))); }
// bf16 is the top half of an f32.
inline float32x4_t bf16x4_to_f32(const std::byte* p) { return vreinterpretq_f32_u32(vshll_n_u16(load_u16x4(p), 16)); }

// Eight lanes in two registers, so every output of the float tiles has two
// independent fma chains: one f32 accumulator of float_tile_kernel.h is
// {lo, hi}, folded lane l + lane l + 4, then (0 + 2) + (1 + 3).
struct F32x8 {
  float32x4_t lo, hi;
};
struct Neon8 {
  using Reg = F32x8;
  static constexpr std::size_t kLanes = 8;
  static Reg zero() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }
  static Reg load_x(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
  static Reg fma(Reg a, Reg b, Reg c) { return {vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)}; }
  static float sum(Reg v) {
    const float32x4_t s = vaddq_f32(v.lo, v.hi);
    const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
  }
};
struct LoadF32 {
  static constexpr std::size_t kBytes = 4;
  F32x8 operator()(const std::byte* p) const { return {load_f32x4(p), load_f32x4(p + 16)}; }
  float scalar(const std::byte* p) const { return read_f32_element(p); }
};

// The panel tiles (panel_tile_kernel.h) keep outputs in lanes: four per register.
struct Neon4 {
  using Reg = float32x4_t;
  static constexpr std::size_t kLanes = 4;
  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static Reg broadcast(const float* p) { return vld1q_dup_f32(p); }
  static void store(float* p, Reg v) { vst1q_f32(p, v); }
};
struct PanelF16 {
  static constexpr std::size_t kBytes = 2;
  float32x4_t operator()(const std::byte* p) const { return f16x4_to_f32(p); }
};
struct PanelBf16 {
  static constexpr std::size_t kBytes = 2;
  float32x4_t operator()(const std::byte* p) const { return bf16x4_to_f32(p); }
};

// The integer steps of quant_dot_neon.h without the dot-product
// instructions: smull widens byte products to int16 (|w x| <= 128 * 127),
// and pairwise adds put them into the lanes sdot would use.
struct IntDots {
  static int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    // a: lane k = elements 2k, 2k + 1, 16 + 2k, 17 + 2k; b the same from 8 on.
    const int32x4_t a = vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0))),
                                    vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    const int32x4_t b = vpadalq_s16(vpaddlq_s16(vmull_high_s8(w0, x0)), vmull_high_s8(w1, x1));
    return vpaddq_s32(a, b);
  }
  // Codes <= 63 against |x| <= 127: a sum of four products (<= 32004) still
  // fits int16, so two pairwise adds make all eight sums of four in one
  // register before the widening scale multiply-add.
  struct Scales {
    int16x8_t lo, hi;
  };
  static Scales scales(int16x8_t lo, int16x8_t hi) { return {lo, hi}; }
  template <int I>
  static int16x8_t scale_reg(const Scales& s) {
    return I < 8 ? s.lo : s.hi;
  }
  template <int I0, int I1>
  static void k_group(int32x4_t& lo, int32x4_t& hi, int8x16_t q0, int8x16_t q1, int8x16_t x0, int8x16_t x1,
                      const Scales& s) {
    const int16x8_t p0 = vmull_s8(vget_low_s8(q0), vget_low_s8(x0)), p1 = vmull_high_s8(q0, x0);
    const int16x8_t p2 = vmull_s8(vget_low_s8(q1), vget_low_s8(x1)), p3 = vmull_high_s8(q1, x1);
    const int16x8_t fours = vpaddq_s16(vpaddq_s16(p0, p1), vpaddq_s16(p2, p3));
    lo = vmlal_laneq_s16(lo, vget_low_s16(fours), scale_reg<I0>(s), I0 % 8);
    hi = vmlal_high_laneq_s16(hi, fours, scale_reg<I1>(s), I1 % 8);
  }
};

}  // namespace
}  // namespace clm

#include "kernels/float_tile_kernel.h"
#include "kernels/panel_tile_kernel.h"
#include "kernels/quant_dot_neon.h"

namespace clm {
namespace {

// Register tiles of 4 weight rows x 2 activation rows: 16 accumulator
// registers, 4 activation and 2 weight registers of the 32. Decode (one
// activation row) takes 8 weight rows at once: 16 independent chains.
constexpr int kRegW = 4, kRegX = 2, kRegW1 = 8;
static_assert(kTileW % kRegW == 0 && kTileX % kRegX == 0 && kTileW % kRegW1 == 0);

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return float_dot<Neon8, LoadF32>(w, x, n); }
void dot4_f32(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Neon8, LoadF32>(w, x, x_stride, n, out);
}
constexpr TileFn tile_f32 = float_tile<Neon8, LoadF32, kRegW, kRegX, kRegW1>;

// Panel tiles of 1 panel (4 registers) x 6 activation rows: 24 accumulators,
// 4 panel registers and a broadcast of the 32. Decode walks 3 panels at once:
// 12 independent chains, with room for the 12 panel registers.
constexpr int kPanelRegP = 1, kPanelRegX = 6, kPanelRegP1 = 3;
constexpr PanelTileFn panel_f16 = panel_tile<Neon4, PanelF16, kPanelRegP, kPanelRegX, kPanelRegP1>;
constexpr PanelTileFn panel_bf16 = panel_tile<Neon4, PanelBf16, kPanelRegP, kPanelRegX, kPanelRegP1>;

void f16_to_f32_row(const std::byte* v, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(v + 2 * i)));
    vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
  }
  for (; i < n; ++i) dst[i] = read_f16_element(v + 2 * i);
}

// quantize_row's Q8_0 in lanes: fmaxnm ignores NaN as fmax does, the
// multiply by 1 / d rounds once as the scalar one does, fcvtas rounds half
// away from zero as std::round does, and fcvt to f16 rounds to nearest even
// as f32_to_f16 does.
void quantize_q8_0_row(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* x = src + b * kQuantBlockElems;
    float32x4_t v[8];
    float32x4_t amax = vdupq_n_f32(0.0f);
    for (int i = 0; i < 8; ++i) {
      v[i] = vld1q_f32(x + 4 * i);
      amax = vmaxnmq_f32(amax, vabsq_f32(v[i]));
    }
    const float d = vmaxnmvq_f32(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int16x8_t q16[4];
    for (int i = 0; i < 4; ++i)
      q16[i] = vcombine_s16(vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * i], id))),
                            vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * i + 1], id))));
    std::byte* out = dst + b * sizeof(BlockQ8_0);
    const __fp16 dh = static_cast<__fp16>(d);
    std::memcpy(out, &dh, sizeof dh);
    int8_t* qs = reinterpret_cast<int8_t*>(out + offsetof(BlockQ8_0, qs));
    vst1q_s8(qs, vcombine_s8(vqmovn_s16(q16[0]), vqmovn_s16(q16[1])));
    vst1q_s8(qs + 16, vcombine_s8(vqmovn_s16(q16[2]), vqmovn_s16(q16[3])));
  }
}

}  // namespace

const VecKernels& neon_vec_kernels() {
  static constexpr VecKernels k{.dot_f32 = dot_f32,
                                .dot4_f32 = dot4_f32,
                                .dot_q8_0 = dot_q8_0,
                                .dot_q4_0 = dot_q4_0,
                                .dot4_q8_0 = dot4_q8_0,
                                .dot4_q4_0 = dot4_q4_0,
                                .dot_q4_k = dot_q4_k,
                                .dot_q5_k = dot_q5_k,
                                .dot_q6_k = dot_q6_k,
                                .dot4_q4_k = dot4_q4_k,
                                .dot4_q5_k = dot4_q5_k,
                                .dot4_q6_k = dot4_q6_k,
                                .tile_f32 = tile_f32,
                                .tile_q8_0 = nullptr,
                                .tile_q4_0 = nullptr,
                                .tile_q4_k = nullptr,
                                .tile_q5_k = nullptr,
                                .tile_q6_k = nullptr,
                                .panel_f16 = panel_f16,
                                .panel_bf16 = panel_bf16,
                                .f16_to_f32_row = f16_to_f32_row,
                                .quantize_q8_0_row = quantize_q8_0_row};
  return k;
}

}  // namespace clm
