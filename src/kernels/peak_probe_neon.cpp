// The NEON probes: 128-bit fmla, and byte products as each NEON path's
// quantized dots make them: smull + sadalp on Neon (16 byte products per
// round of two of each), one sdot on NeonDot (16 per instruction).
#include <arm_neon.h>

#include "kernels/peak_probe.h"
#include "kernels/target_region.h"

namespace clm {

namespace {

// Sixteen accumulators of the 32 vector registers: more chains than fma
// latency x pipes on current cores (4 cycles x 2 pipes on a Cortex-A76),
// with room for the operands.
constexpr int kChains = 16;

double fmla_4s(std::uint64_t iterations, float* sink) {
  float32x4_t acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = vdupq_n_f32(0.25f * static_cast<float>(k + 1));
  float32x4_t a = vdupq_n_f32(0.5f), b = vdupq_n_f32(0.5f);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+w"(a), "+w"(b));  // opaque: nothing folds or hoists
    for (int k = 0; k < kChains; ++k) acc[k] = vfmaq_f32(b, acc[k], a);
  }
  float32x4_t s = acc[0];
  for (int k = 1; k < kChains; ++k) s = vaddq_f32(s, acc[k]);
  *sink = vgetq_lane_f32(s, 0);
  return 2.0 * 4 * kChains * static_cast<double>(iterations);
}

// Eight chains: each round also needs two product registers per chain.
constexpr int kDotChains = 8;

double smull_sadalp(std::uint64_t iterations, float* sink) {
  int32x4_t acc[kDotChains];
  for (int k = 0; k < kDotChains; ++k) acc[k] = vdupq_n_s32(k);
  int8x16_t u = vdupq_n_s8(3), s = vdupq_n_s8(-2);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    for (int k = 0; k < kDotChains; ++k) {
      // Opaque per chain: the products do not depend on acc, so without it
      // one pair of them would serve every chain.
      asm volatile("" : "+w"(u), "+w"(s));
      acc[k] = vpadalq_s16(acc[k], vmull_s8(vget_low_s8(u), vget_low_s8(s)));
      acc[k] = vpadalq_s16(acc[k], vmull_high_s8(u, s));
    }
  }
  int32x4_t t = acc[0];
  for (int k = 1; k < kDotChains; ++k) t = vaddq_s32(t, acc[k]);
  *sink = static_cast<float>(vgetq_lane_s32(t, 0));
  return 2.0 * 16 * kDotChains * static_cast<double>(iterations);
}

// The dot-product extension only here, in a region of its own.
CLM_TARGET_BEGIN("arch=armv8.2-a+dotprod")
double sdot_4s(std::uint64_t iterations, float* sink) {
  int32x4_t acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = vdupq_n_s32(k);
  int8x16_t u = vdupq_n_s8(3), s = vdupq_n_s8(-2);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+w"(u), "+w"(s));
    for (int k = 0; k < kChains; ++k) acc[k] = vdotq_s32(acc[k], u, s);
  }
  int32x4_t t = acc[0];
  for (int k = 1; k < kChains; ++k) t = vaddq_s32(t, acc[k]);
  *sink = static_cast<float>(vgetq_lane_s32(t, 0));
  return 2.0 * 16 * kChains * static_cast<double>(iterations);
}
CLM_TARGET_END

constexpr PeakLoops kNeon{fmla_4s, "fmla v.4s", smull_sadalp, "smull + sadalp"};
constexpr PeakLoops kNeonDot{fmla_4s, "fmla v.4s", sdot_4s, "sdot v.4s"};

}  // namespace

const PeakLoops& neon_peak_loops() { return kNeon; }
const PeakLoops& neon_dot_peak_loops() { return kNeonDot; }

}  // namespace clm
