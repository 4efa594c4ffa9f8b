// The AArch64 Advanced SIMD path of rope_shift_paths.h, for Neon and NeonDot
// alike: four elements per register, the pairs that do not fill one done
// element by element with the same fma. vfmaq_f32 is the reference's fused
// fma; f16 converts exactly to f32 and back to nearest even.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/element_read.h"
#include "kernels/rope_shift_kernel.h"
#include "kernels/rope_shift_paths.h"
#include "util/half.h"

namespace clm {

namespace {

struct Lanes {
  using Reg = float32x4_t;
  static constexpr std::size_t kWidth = 4;
  static Reg load(const float* p) { return vld1q_f32(p); }
  static Reg dup_pairs(const float* p) {
    const float32x2_t two = vld1_f32(p);
    return vzip1q_f32(vcombine_f32(two, two), vcombine_f32(two, two));
  }
  static Reg swap_pairs(Reg x) { return vrev64q_f32(x); }
  static Reg neg(Reg x) { return vnegq_f32(x); }
  static Reg neg_first(Reg x) {
    const uint32x4_t first = {0x80000000u, 0u, 0x80000000u, 0u};
    return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(x), first));
  }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
};

// Rows need not be aligned for float access, so they are moved as bytes.
struct F32 {
  static constexpr std::size_t kBytes = 4;
  static float32x4_t load(const std::byte* p) { return vreinterpretq_f32_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(p))); }
  static void store(std::byte* p, float32x4_t v) { vst1q_u8(reinterpret_cast<uint8_t*>(p), vreinterpretq_u8_f32(v)); }
  static float load1(const std::byte* p) { return read_f32_element(p); }
  static void store1(std::byte* p, float v) { std::memcpy(p, &v, 4); }
};
struct F16 {
  static constexpr std::size_t kBytes = 2;
  static float32x4_t load(const std::byte* p) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(reinterpret_cast<const uint8_t*>(p))));
  }
  static void store(std::byte* p, float32x4_t v) {
    vst1_u8(reinterpret_cast<uint8_t*>(p), vreinterpret_u8_f16(vcvt_f16_f32(v)));
  }
  static float load1(const std::byte* p) { return read_f16_element(p); }
  static void store1(std::byte* p, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
  }
};

}  // namespace

void rope_shift_rotate_neon(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table) {
  rope_rotate_rows<Lanes, F16, F32>(src, dst, type, n_rows, stride_elems, params, table);
}

}  // namespace clm
