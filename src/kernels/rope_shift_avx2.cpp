// The AVX2+FMA+F16C path of rope_shift_paths.h: eight elements per vector,
// the pairs that do not fill one done element by element with the same fma.
// Compiled for those instructions by a target pragma and run only after
// cpu_features has confirmed them.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/rope_shift_paths.h"
#include "kernels/target_region.h"

CLM_TARGET_BEGIN("avx2,fma,f16c")

#include "kernels/rope_shift_kernel.h"

namespace clm {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

struct Lanes {
  using Reg = __m256;
  static constexpr std::size_t kWidth = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg dup_pairs(const float* p) {
    return _mm256_permutevar8x32_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p)),
                                    _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  }
  static Reg swap_pairs(Reg x) { return _mm256_permute_ps(x, 0xB1); }
  static Reg neg(Reg x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }
  static Reg neg_first(Reg x) {
    return _mm256_xor_ps(x, _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f));
  }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
};

struct F32 {
  static constexpr std::size_t kBytes = 4;
  static __m256 load(const std::byte* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static void store(std::byte* p, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(p), v); }
  static float load1(const std::byte* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static void store1(std::byte* p, float v) { std::memcpy(p, &v, 4); }
};
struct F16 {
  static constexpr std::size_t kBytes = 2;
  static __m256 load(const std::byte* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(std::byte* p, __m256 v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, kRound)); }
  static float load1(const std::byte* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
  static void store1(std::byte* p, float v) {
    const uint16_t h = static_cast<uint16_t>(_cvtss_sh(v, kRound));
    std::memcpy(p, &h, 2);
  }
};

}  // namespace

void rope_shift_rotate_avx2(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table) {
  rope_rotate_rows<Lanes, F16, F32>(src, dst, type, n_rows, stride_elems, params, table);
}

}  // namespace clm

CLM_TARGET_END
