// The AVX2+FMA+F16C path of attn_kernels.h: the reference's sixteen lanes as
// two 8-lane halves (lanes 0-7 and 8-15), so the arithmetic is lane for lane
// the same as the other paths'. Compiled for those instructions by a target
// pragma and run only after cpu_features has confirmed them.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attn_exp.h"
#include "kernels/attn_kernels.h"
#include "kernels/element_read.h"
#include "kernels/kv_row_codec.h"
#include "kernels/target_region.h"
#include "util/half.h"

CLM_TARGET_BEGIN("avx2,fma,f16c")
#include "kernels/q4_element_f16c.h"  // inside the region: these use F16C
#include "kernels/q8_element_f16c.h"

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;
constexpr std::size_t kHalf = 8;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Elements i..i+7 of a stored row as f32 (vec), element i alone (one).
struct LoadF32 {
  static __m256 vec(const std::byte* p, std::size_t i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * i)); }
  static float one(const std::byte* p, std::size_t i) { return read_f32_element(p + 4 * i); }
};
struct LoadF16 {
  static __m256 vec(const std::byte* p, std::size_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static float one(const std::byte* p, std::size_t i) { return read_f16_element(p + 2 * i); }
};
// i is a multiple of 8, so the eight values share one group (kv_row_codec.h)
// and d * q is exact: the floats read_q8_0_element gives.
struct LoadQ8 : Q8ElementF16c {
  static __m256 vec(const std::byte* p, std::size_t i) {
    const __m256 d = _mm256_set1_ps(scale(p, i));
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + q8_value_offset(i)));
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
};
// The same for q4_0: the eight values are four whole bytes of one group,
// read exactly (a wider load could pass the row's end), their nibbles
// interleaved back into element order (low, high, low, ...).
struct LoadQ4 : Q4ElementF16c {
  static __m256 vec(const std::byte* p, std::size_t i) {
    const __m256 d = _mm256_set1_ps(scale(p, i));
    int32_t four;
    std::memcpy(&four, p + q4_byte_offset(i), 4);
    const __m128i b = _mm_cvtsi32_si128(four);
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    const __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
};

// fp8: eight E4M3 bytes widened to f16 bit patterns, the sign to bit 15 and
// the other seven bits to bits 14..7. That pattern's f16 value is the byte's
// value times 2^-8 exactly (subnormals too: E4M3's steps of 2^-9 are f16's of
// 2^-17), so F16C converts it exactly and one product with the row's
// 2^(e + 8) gives read_fp8_element's floats.
struct LoadFp8 {
  static __m256 vec(const std::byte* p, std::size_t i) {
    const __m128i x = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + fp8_value_offset(i))));
    const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(x, _mm_set1_epi16(0x80)), 8),
                                   _mm_slli_epi16(_mm_and_si128(x, _mm_set1_epi16(0x7F)), 7));
    return _mm256_mul_ps(_mm256_set1_ps(fp8_row_scale(p) * 256.0f), _mm256_cvtph_ps(h));
  }
  static float one(const std::byte* p, std::size_t i) { return read_fp8_element(p, i); }
};

// 2^n for integral n in [-126, 127], built in the exponent field.
inline __m256 pow2(__m256 n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

// attn_exp.h's algorithm on 8 lanes. The clamps keep NaN (max/min return
// their second operand when either is NaN). p * 2^n as p * 2^(n/2) (exact:
// the product stays normal) times 2^(n - n/2): one rounding, as ldexp's.
inline __m256 exp8(__m256 x) {
  using namespace attn_exp;
  x = _mm256_max_ps(_mm256_set1_ps(kMin), x);
  x = _mm256_min_ps(_mm256_set1_ps(kMax), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), kRound);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kC7);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC0));
  const __m256 n1 = _mm256_round_ps(_mm256_mul_ps(n, _mm256_set1_ps(0.5f)), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 n2 = _mm256_sub_ps(n, n1);
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(n2));
  // NaN in: n is NaN and pow2 would be garbage, so pass x through.
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

void exp_row(const float* x, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + kHalf <= n; i += kHalf) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float buf[kHalf] = {};
    std::copy(x + i, x + n, buf);
    _mm256_storeu_ps(buf, exp8(_mm256_loadu_ps(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

float max_row(const float* x, std::size_t n) {
  __m256 m = _mm256_set1_ps(kNegInf);
  std::size_t i = 0;
  for (; i + kHalf <= n; i += kHalf) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  alignas(32) float lanes[kHalf];
  _mm256_store_ps(lanes, m);
  float best = kNegInf;
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

// Sixteen elements into the four double accumulators of lanes 0-3, 4-7,
// 8-11, 12-15.
inline void add_lanes(__m256 lo, __m256 hi, __m256d* acc) {
  acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
  acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
  acc[2] = _mm256_add_pd(acc[2], _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
  acc[3] = _mm256_add_pd(acc[3], _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
}

inline void exp_sum_16(float* x, __m256 vmax, __m256d* acc) {
  const __m256 lo = exp8(_mm256_sub_ps(_mm256_loadu_ps(x), vmax));
  const __m256 hi = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + kHalf), vmax));
  _mm256_storeu_ps(x, lo);
  _mm256_storeu_ps(x + kHalf, hi);
  add_lanes(lo, hi, acc);
}

double exp_sum_row(float* x, std::size_t n, float max) {
  const __m256 vmax = _mm256_set1_ps(max);
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
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
  const __m256d b0 = _mm256_add_pd(acc[0], acc[2]);  // l + l+8, l = 0..3
  const __m256d b1 = _mm256_add_pd(acc[1], acc[3]);  // l = 4..7
  const __m256d c = _mm256_add_pd(b0, b1);           // l + l+4
  const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));
  return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

void scale_row(float* x, std::size_t n, float inv, bool round) {
  const __m256 vinv = _mm256_set1_ps(inv);
  std::size_t i = 0;
  for (; i + kHalf <= n; i += kHalf) {
    const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
    _mm256_storeu_ps(x + i, round ? _mm256_cvtph_ps(_mm256_cvtps_ph(p, kRound)) : p);
  }
  for (; i < n; ++i) {
    const float p = x[i] * inv;
    x[i] = round ? f16_to_f32(f32_to_f16(p)) : p;
  }
}

// The lanes of attn_pv_kernel.h and attn_score_kernel.h: one register holds
// 8 of a row's elements.
struct AttnYmm {
  using Reg = __m256;
  static constexpr std::size_t kWidth = 8;
  static constexpr int kPvTile = 2;
  static constexpr int kPvAccumulators = 8;  // 2 queries x 32 dims, 2 broadcasts and a V vector of 16 registers
  static constexpr int kScoreTile = 4;       // 8 accumulators and 2 K vectors of 16 registers
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static bool any_zero(Reg v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_EQ_OQ)) != 0; }
  // Lanes 0-7 and 8-15 of one score to its sum, by the reference's halving.
  static float fold16(const Reg* a) {
    const __m256 b = _mm256_add_ps(a[0], a[1]);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
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
  for (; i + kHalf <= n; i += kHalf)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRound));
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <class Load>
constexpr KvRowKernels row_kernels() {
  return {.scores = scores<AttnYmm, Load>, .pv = pv<AttnYmm, Load>, .pv_queries = pv_queries<AttnYmm, Load>};
}

}  // namespace
}  // namespace clm

CLM_TARGET_END

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const AttnKernels& avx2_attn_kernels() {
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
