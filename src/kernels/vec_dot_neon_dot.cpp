// The NeonDot path: the Neon table (vec_dot_neon.cpp) with the integer dots
// of the Q8_0 / Q4_0 and k-quant kernels through sdot, four byte products
// summed into each int32 lane by one instruction. Compiled for the
// dot-product extension by a target region (the baseline is armv8-a) and
// chosen only after cpu_features has confirmed it (asimddp). The region
// names armv8.2-a, where the extension was introduced, because GCC's
// arm_neon.h defines vdotq_s32 for that architecture and inlines it only
// into functions that have all of it; every CPU with the extension does.
// sdot leaves
// exactly the integers of Neon's smull route in the same lanes, so the two
// paths return the same bits.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/target_region.h"
#include "kernels/vec_dot.h"

CLM_TARGET_BEGIN("arch=armv8.2-a+dotprod")

namespace clm {
namespace {

struct IntDots {
  static int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
  }
  // sdot leaves int32 sums, so the scales are widened to int32 once per super-block.
  struct Scales {
    int32x4_t v0, v1, v2, v3;
  };
  static Scales scales(int16x8_t lo, int16x8_t hi) {
    return {vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)), vmovl_high_s16(hi)};
  }
  template <int I>
  static int32x4_t scale_reg(const Scales& s) {
    return I < 4 ? s.v0 : I < 8 ? s.v1 : I < 12 ? s.v2 : s.v3;
  }
  template <int I0, int I1>
  static void k_group(int32x4_t& lo, int32x4_t& hi, int8x16_t q0, int8x16_t q1, int8x16_t x0, int8x16_t x1,
                      const Scales& s) {
    lo = vmlaq_laneq_s32(lo, vdotq_s32(vdupq_n_s32(0), q0, x0), scale_reg<I0>(s), I0 % 4);
    hi = vmlaq_laneq_s32(hi, vdotq_s32(vdupq_n_s32(0), q1, x1), scale_reg<I1>(s), I1 % 4);
  }
};

}  // namespace
}  // namespace clm

#include "kernels/quant_dot_neon.h"

CLM_TARGET_END

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const VecKernels& neon_dot_vec_kernels() {
  static const VecKernels k = [] {
    VecKernels t = neon_vec_kernels();
    t.dot_q8_0 = dot_q8_0;
    t.dot_q4_0 = dot_q4_0;
    t.dot4_q8_0 = dot4_q8_0;
    t.dot4_q4_0 = dot4_q4_0;
    t.dot_q4_k = dot_q4_k;
    t.dot_q5_k = dot_q5_k;
    t.dot_q6_k = dot_q6_k;
    t.dot4_q4_k = dot4_q4_k;
    t.dot4_q5_k = dot4_q5_k;
    t.dot4_q6_k = dot4_q6_k;
    return t;
  }();
  return k;
}

}  // namespace clm
