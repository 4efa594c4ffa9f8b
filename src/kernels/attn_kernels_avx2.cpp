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
#include "util/half.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;
constexpr std::size_t kHalf = 8;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline float read_f32(const std::byte* p, std::size_t i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
inline float read_f16(const std::byte* p, std::size_t i) {
  uint16_t v;
  std::memcpy(&v, p + 2 * i, 2);
  return _cvtsh_ss(v);
}

struct LoadF32 {
  static constexpr std::size_t kBytes = 4;
  static __m256 vec(const std::byte* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float one(const std::byte* p, std::size_t i) { return read_f32(p, i); }
};
struct LoadF16 {
  static constexpr std::size_t kBytes = 2;
  static __m256 vec(const std::byte* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float one(const std::byte* p, std::size_t i) { return read_f16(p, i); }
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

// Lanes 0-7 and 8-15 of one score to its sum, by the reference's halving.
inline float fold_lanes(__m256 lo, __m256 hi) {
  const __m256 b = _mm256_add_ps(lo, hi);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// NQ queries against one row: lanes 0-7 and 8-15 of each accumulated apart,
// each K vector loaded (and converted) once for all NQ, then the halving.
template <int NQ, class Load>
void score_row_nq(const std::byte* kr, const float* q, std::size_t q_stride, std::size_t hd, float scale, float* out,
                  std::size_t out_stride) {
  constexpr std::size_t kB = Load::kBytes;
  const std::size_t whole = hd / kLanes * kLanes;
  __m256 lo[NQ], hi[NQ];
  for (int i = 0; i < NQ; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
  for (std::size_t j = 0; j < whole; j += kLanes) {
    const __m256 klo = Load::vec(kr + j * kB), khi = Load::vec(kr + (j + kHalf) * kB);
    for (int i = 0; i < NQ; ++i) {
      const float* qi = q + static_cast<std::size_t>(i) * q_stride;
      lo[i] = _mm256_fmadd_ps(klo, _mm256_loadu_ps(qi + j), lo[i]);
      hi[i] = _mm256_fmadd_ps(khi, _mm256_loadu_ps(qi + j + kHalf), hi[i]);
    }
  }
  for (int i = 0; i < NQ; ++i) {
    const float* qi = q + static_cast<std::size_t>(i) * q_stride;
    float s = fold_lanes(lo[i], hi[i]);
    for (std::size_t t = whole; t < hd; ++t) s = std::fma(Load::one(kr, t), qi[t], s);
    out[static_cast<std::size_t>(i) * out_stride] = s * scale;
  }
}

template <class Load>
void scores(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride, int n_q,
            std::size_t hd, float scale, float* out, std::size_t out_stride) {
  constexpr int kTile = 4;  // 8 accumulators and 2 K vectors of 16 registers
  for (int r = 0; r < n_rows; ++r) {
    const std::byte* kr = k + static_cast<std::size_t>(r) * k_stride;
    float* o = out + static_cast<std::size_t>(r);
    int i = 0;
    for (; i + kTile <= n_q; i += kTile)
      score_row_nq<kTile, Load>(kr, q + static_cast<std::size_t>(i) * q_stride, q_stride, hd, scale,
                                o + static_cast<std::size_t>(i) * out_stride, out_stride);
    for (; i < n_q; ++i)
      score_row_nq<1, Load>(kr, q + static_cast<std::size_t>(i) * q_stride, q_stride, hd, scale,
                            o + static_cast<std::size_t>(i) * out_stride, out_stride);
  }
}

// W vectors of out stay in registers across all rows.
template <int W, class Load>
void pv_span(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, float* out) {
  __m256 acc[W];
  for (int j = 0; j < W; ++j) acc[j] = _mm256_loadu_ps(out + j * kHalf);
  for (int r = 0; r < n_rows; ++r) {
    if (p[r] == 0.0f) continue;
    const __m256 pr = _mm256_set1_ps(p[r]);
    const std::byte* vr = v + static_cast<std::size_t>(r) * v_stride;
    for (int j = 0; j < W; ++j) acc[j] = _mm256_fmadd_ps(pr, Load::vec(vr + j * kHalf * Load::kBytes), acc[j]);
  }
  for (int j = 0; j < W; ++j) _mm256_storeu_ps(out + j * kHalf, acc[j]);
}

template <class Load>
void pv(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd, float* out) {
  constexpr std::size_t kB = Load::kBytes;
  std::size_t d = 0;
  for (; d + 4 * kHalf <= hd; d += 4 * kHalf) pv_span<4, Load>(p, v + d * kB, v_stride, n_rows, out + d);
  for (; d + kHalf <= hd; d += kHalf) pv_span<1, Load>(p, v + d * kB, v_stride, n_rows, out + d);
  for (; d < hd; ++d)
    for (int r = 0; r < n_rows; ++r)
      if (p[r] != 0.0f) out[d] = std::fma(p[r], Load::one(v + static_cast<std::size_t>(r) * v_stride, d), out[d]);
}

// True when every p[r], r < n, is nonzero: such a query's pv visits every
// row, so it can share a register tile with others without any skipping.
inline bool all_nonzero(const float* p, int n) {
  const __m256 zero = _mm256_setzero_ps();
  int r = 0;
  for (; r + static_cast<int>(kHalf) <= n; r += static_cast<int>(kHalf))
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + r), zero, _CMP_EQ_OQ)) != 0) return false;
  for (; r < n; ++r)
    if (p[r] == 0.0f) return false;
  return true;
}

// NQ queries' W output vectors stay in registers over all rows; each V vector
// is loaded and converted once for the tile. Every element gets its own
// query's fma chain, row by row, as in pv.
template <int NQ, int W, class Load>
void pv_tile(const float* const* p, const std::byte* v, std::size_t v_stride, int n_rows, float* const* out,
             std::size_t d) {
  __m256 acc[NQ][W];
  for (int i = 0; i < NQ; ++i)
    for (int j = 0; j < W; ++j) acc[i][j] = _mm256_loadu_ps(out[i] + d + j * kHalf);
  for (int r = 0; r < n_rows; ++r) {
    __m256 pr[NQ];
    for (int i = 0; i < NQ; ++i) pr[i] = _mm256_set1_ps(p[i][r]);
    const std::byte* vr = v + static_cast<std::size_t>(r) * v_stride + d * Load::kBytes;
    for (int j = 0; j < W; ++j) {
      const __m256 vv = Load::vec(vr + j * kHalf * Load::kBytes);
      for (int i = 0; i < NQ; ++i) acc[i][j] = _mm256_fmadd_ps(pr[i], vv, acc[i][j]);
    }
  }
  for (int i = 0; i < NQ; ++i)
    for (int j = 0; j < W; ++j) _mm256_storeu_ps(out[i] + d + j * kHalf, acc[i][j]);
}

template <int NQ, class Load>
void pv_dense(const float* const* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd,
              float* const* out) {
  std::size_t d = 0;
  for (; d + 4 * kHalf <= hd; d += 4 * kHalf) pv_tile<NQ, 4, Load>(p, v, v_stride, n_rows, out, d);
  for (; d + kHalf <= hd; d += kHalf) pv_tile<NQ, 1, Load>(p, v, v_stride, n_rows, out, d);
  for (; d < hd; ++d)
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < n_rows; ++r)
        out[i][d] = std::fma(p[i][r], Load::one(v + static_cast<std::size_t>(r) * v_stride, d), out[i][d]);
}

template <class Load>
void pv_queries(const float* p, std::size_t p_stride, int n_q, const std::byte* v, std::size_t v_stride, int n_rows,
                std::size_t hd, float* const* out) {
  constexpr int kTile = 2;  // 8 accumulators, 2 broadcasts and a V vector of 16 registers
  const float* tp[kTile];
  float* to[kTile];
  int n = 0;
  for (int i = 0; i < n_q; ++i) {
    const float* pi = p + static_cast<std::size_t>(i) * p_stride;
    if (!all_nonzero(pi, n_rows)) {  // skips rows: alone, through pv
      pv<Load>(pi, v, v_stride, n_rows, hd, out[i]);
      continue;
    }
    tp[n] = pi;
    to[n++] = out[i];
    if (n == kTile) {
      pv_dense<kTile, Load>(tp, v, v_stride, n_rows, hd, to);
      n = 0;
    }
  }
  if (n == 1) pv_dense<1, Load>(tp, v, v_stride, n_rows, hd, to);
}

void f32_to_f16_row(const float* x, std::byte* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + kHalf <= n; i += kHalf)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRound));
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace
}  // namespace clm

#pragma GCC pop_options

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const AttnKernels& avx2_attn_kernels() {
  static constexpr AttnKernels k{.exp_row = exp_row,
                                 .max_row = max_row,
                                 .exp_sum_row = exp_sum_row,
                                 .scale_row = scale_row,
                                 .scores_f16 = scores<LoadF16>,
                                 .scores_f32 = scores<LoadF32>,
                                 .pv_f16 = pv<LoadF16>,
                                 .pv_f32 = pv<LoadF32>,
                                 .pv_queries_f16 = pv_queries<LoadF16>,
                                 .pv_queries_f32 = pv_queries<LoadF32>,
                                 .f32_to_f16_row = f32_to_f16_row};
  return k;
}

}  // namespace clm
