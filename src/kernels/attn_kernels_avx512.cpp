// The AVX-512 (F+BW) path of attn_kernels.h: one 16-lane vector is one set of
// the reference's lanes. Compiled for those instructions by a target pragma
// and run only after cpu_features has confirmed them (and AVX2+FMA+F16C).
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

CLM_TARGET_BEGIN("avx512f,avx512bw,avx2,fma,f16c")
#include "kernels/q4_element_f16c.h"  // inside the region: these use F16C
#include "kernels/q8_element_f16c.h"
// GCC 12's own 512->256 casts read a deliberately undefined register, which
// -Wuninitialized reports once the intrinsics are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a warning only GCC has
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __mmask16 tail_mask(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Elements i..i+15 of a stored row as f32 (vec), element i alone (one).
struct LoadF32 {
  static __m512 vec(const std::byte* p, std::size_t i) { return _mm512_loadu_ps(p + 4 * i); }
  static float one(const std::byte* p, std::size_t i) { return read_f32_element(p + 4 * i); }
};
struct LoadF16 {
  static __m512 vec(const std::byte* p, std::size_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static float one(const std::byte* p, std::size_t i) { return read_f16_element(p + 2 * i); }
};
// i is a multiple of 16, so the sixteen values share one group
// (kv_row_codec.h) and d * q is exact: the floats read_q8_0_element gives.
struct LoadQ8 : Q8ElementF16c {
  static __m512 vec(const std::byte* p, std::size_t i) {
    const __m512 d = _mm512_set1_ps(scale(p, i));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + q8_value_offset(i)));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};
// The same for q4_0: the sixteen values are eight whole bytes of one group,
// their nibbles interleaved back into element order (low, high, low, ...).
struct LoadQ4 : Q4ElementF16c {
  static __m512 vec(const std::byte* p, std::size_t i) {
    const __m512 d = _mm512_set1_ps(scale(p, i));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + q4_byte_offset(i)));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    const __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};

// fp8: sixteen E4M3 bytes as f16 patterns, as on the AVX2 path (there the
// reason this is exact).
struct LoadFp8 {
  static __m512 vec(const std::byte* p, std::size_t i) {
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + fp8_value_offset(i))));
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8),
                                      _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x7F)), 7));
    return _mm512_mul_ps(_mm512_set1_ps(fp8_row_scale(p) * 256.0f), _mm512_cvtph_ps(h));
  }
  static float one(const std::byte* p, std::size_t i) { return read_fp8_element(p, i); }
};

// attn_exp.h's algorithm on 16 lanes. The clamps keep NaN (max/min return
// their second operand when either is NaN); scalef rounds p * 2^n once, as
// ldexp does.
inline __m512 exp16(__m512 x) {
  using namespace attn_exp;
  x = _mm512_max_ps(_mm512_set1_ps(kMin), x);
  x = _mm512_min_ps(_mm512_set1_ps(kMax), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), kRound);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kC7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC0));
  return _mm512_scalef_ps(p, n);
}

void exp_row(const float* x, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

float max_row(const float* x, std::size_t n) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m = ninf;
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) m = _mm512_max_ps(_mm512_loadu_ps(x + i), m);
  if (i < n) m = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i), m);
  return _mm512_reduce_max_ps(m);
}

// Lanes 0-7 and 8-15 of the reference's sixteen double lanes.
inline void add_lanes(__m512 e, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}

double exp_sum_row(float* x, std::size_t n, float max) {
  const __m512 vmax = _mm512_set1_ps(max);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmax));
    _mm512_storeu_ps(x + i, e);
    add_lanes(e, lo, hi);
  }
  if (i < n) {
    // Lanes past the end read -inf: exp gives +0, which leaves a lane as it is.
    const __mmask16 m = tail_mask(n - i);
    const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    const __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, m, x + i), vmax));
    _mm512_mask_storeu_ps(x + i, m, e);
    add_lanes(e, lo, hi);
  }
  const __m512d b = _mm512_add_pd(lo, hi);                                                    // l + l+8
  const __m256d c = _mm256_add_pd(_mm512_castpd512_pd256(b), _mm512_extractf64x4_pd(b, 1));  // l + l+4
  const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));       // l + l+2
  return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

inline __m512 round_f16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, kRound)); }

void scale_row(float* x, std::size_t n, float inv, bool round) {
  const __m512 vinv = _mm512_set1_ps(inv);
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 p = _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv);
    _mm512_storeu_ps(x + i, round ? round_f16(p) : p);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv);
    _mm512_mask_storeu_ps(x + i, m, round ? round_f16(p) : p);
  }
}

// Sixteen vectors (one score's lanes each) to one vector of their sums, in
// order, each by the reference's halving: pairs of 256-bit halves, then
// 128-bit quarters, then within quarters, so that lane j of the result ends
// as slot 4 * (j % 4) + j / 4, which the final permute puts back.
inline __m512 fold_pair_256(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}
inline __m512 fold_pair_128(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
}
inline __m512 fold_pair_64(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
}
inline __m512 fold_pair_32(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
}
inline __m512 fold16x16(const __m512* v) {
  __m512 c[8], e[4], g[2];
  for (int i = 0; i < 8; ++i) c[i] = fold_pair_256(v[2 * i], v[2 * i + 1]);
  for (int i = 0; i < 4; ++i) e[i] = fold_pair_128(c[2 * i], c[2 * i + 1]);
  for (int i = 0; i < 2; ++i) g[i] = fold_pair_64(e[2 * i], e[2 * i + 1]);
  const __m512 f = fold_pair_32(g[0], g[1]);
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, f);
}

// NQ queries against each row; a row's vectors are loaded and converted once
// for all of them.
template <int NQ, class Load>
void scores_nq(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride,
               std::size_t hd, float scale, float* out, std::size_t out_stride) {
  const std::size_t whole = hd / kLanes * kLanes;
  __m512 acc[NQ][kLanes];
  for (int r = 0; r < n_rows; ++r) {
    const std::byte* kr = k + static_cast<std::size_t>(r) * k_stride;
    __m512 a[NQ];
    for (int i = 0; i < NQ; ++i) a[i] = _mm512_setzero_ps();
    for (std::size_t j = 0; j < whole; j += kLanes) {
      const __m512 kv = Load::vec(kr, j);
      for (int i = 0; i < NQ; ++i)
        a[i] = _mm512_fmadd_ps(kv, _mm512_loadu_ps(q + static_cast<std::size_t>(i) * q_stride + j), a[i]);
    }
    for (int i = 0; i < NQ; ++i) acc[i][r] = a[i];
  }
  const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1u);
  for (int i = 0; i < NQ; ++i) {
    for (int r = n_rows; r < static_cast<int>(kLanes); ++r) acc[i][r] = _mm512_setzero_ps();
    const __m512 folded = fold16x16(acc[i]);
    float* oi = out + static_cast<std::size_t>(i) * out_stride;
    if (whole == hd) {  // no tail: scale and store all rows at once
      _mm512_mask_storeu_ps(oi, rows, _mm512_mul_ps(folded, _mm512_set1_ps(scale)));
      continue;
    }
    alignas(64) float s[kLanes];
    _mm512_store_ps(s, folded);
    const float* qi = q + static_cast<std::size_t>(i) * q_stride;
    for (int r = 0; r < n_rows; ++r) {
      const std::byte* kr = k + static_cast<std::size_t>(r) * k_stride;
      float sr = s[r];
      for (std::size_t t = whole; t < hd; ++t) sr = std::fma(Load::one(kr, t), qi[t], sr);
      oi[r] = sr * scale;
    }
  }
}

// Many queries against one chunk of rows, with rows in lanes: the chunk is
// converted and transposed once (kt[d] holds element d of every row), then
// each query's reference lane a_l becomes a vector A_l over the rows, built by
// the same fma chain (k[16j+l] * q[16j+l] added in order of j), and the
// reference's halving becomes whole-vector adds. So each score sees exactly
// the reference's operations, while the per-query work loses the horizontal
// fold (about 46 shuffles and adds per query and 16 rows) and the K
// conversion, which a register tile of queries shares.
constexpr std::size_t kMaxTransposedHd = 256;
// Below this many queries the transpose costs more than the folds it saves.
constexpr int kMinTransposedQueries = 4;

inline void transpose16x16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);      // per 128 bits: a0 b0 a1 b1
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);  // a2 b2 a3 b3
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));      // a0 b0 c0 d0
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));  // a1 b1 c1 d1
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));  // a2 b2 c2 d2
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));  // a3 b3 c3 d3
  }
  // r[4g + j], 128-bit part L: rows 4g..4g+3 of element 4L + j. Gather the
  // parts L of g = 0..3 into element 4L + j's vector.
  __m512 o[16];
  for (int j = 0; j < 4; ++j) {
    const __m512 u0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);   // g0.L0 g0.L2 g1.L0 g1.L2
    const __m512 u1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);   // g0.L1 g0.L3 g1.L1 g1.L3
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    o[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    o[8 + j] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    o[4 + j] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    o[12 + j] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = o[i];
}

// kt[d * 16 + r] = element d of row r as f32; rows past n_rows are 0 (and
// not read).
template <class Load>
void transpose_rows(const std::byte* k, std::size_t k_stride, int n_rows, std::size_t hd, float* kt) {
  const std::size_t whole = hd / kLanes * kLanes;
  for (std::size_t d = 0; d < whole; d += kLanes) {
    __m512 r[kLanes];
    for (int i = 0; i < static_cast<int>(kLanes); ++i)
      r[i] = i < n_rows ? Load::vec(k + static_cast<std::size_t>(i) * k_stride, d) : _mm512_setzero_ps();
    transpose16x16(r);
    for (std::size_t l = 0; l < kLanes; ++l) _mm512_store_ps(kt + (d + l) * kLanes, r[l]);
  }
  for (std::size_t t = whole; t < hd; ++t)
    for (int i = 0; i < static_cast<int>(kLanes); ++i)
      kt[t * kLanes + static_cast<std::size_t>(i)] =
          i < n_rows ? Load::one(k + static_cast<std::size_t>(i) * k_stride, t) : 0.0f;
}

// B_l = A_l + A_{l+8} for NQ queries: the fma chains of lanes l and l+8
// (A_l over all rows, k[16j+l] * q[16j+l] added in order of j) side by side,
// 2 * NQ independent chains to cover the fma latency, then the halving's
// first step. kWhole: the whole-chunk elements of hd when known at compile
// time (the loop unrolls), 0 to take `whole`.
template <int NQ, std::size_t kWhole>
inline void lane_pair(const float* kt, const float* const* q, std::size_t l, std::size_t whole, __m512* b) {
  const std::size_t n = kWhole != 0 ? kWhole : whole;
  __m512 hi[NQ];
  for (int i = 0; i < NQ; ++i) b[i] = hi[i] = _mm512_setzero_ps();
  for (std::size_t j = 0; j < n; j += kLanes) {
    const __m512 klo = _mm512_load_ps(kt + (j + l) * kLanes);
    const __m512 khi = _mm512_load_ps(kt + (j + l + 8) * kLanes);
    for (int i = 0; i < NQ; ++i) {
      b[i] = _mm512_fmadd_ps(klo, _mm512_set1_ps(q[i][j + l]), b[i]);
      hi[i] = _mm512_fmadd_ps(khi, _mm512_set1_ps(q[i][j + l + 8]), hi[i]);
    }
  }
  for (int i = 0; i < NQ; ++i) b[i] = _mm512_add_ps(b[i], hi[i]);
}

// D_m = (B_m + B_{m+4}) + (B_{m+2} + B_{m+6}) for m = 0, 1: the second and
// third steps, in the tree order that keeps few vectors live.
template <int NQ, std::size_t kWhole>
inline void lane_quad(const float* kt, const float* const* q, std::size_t m, std::size_t whole, __m512* d) {
  __m512 b0[NQ], b4[NQ];
  lane_pair<NQ, kWhole>(kt, q, m, whole, b0);
  lane_pair<NQ, kWhole>(kt, q, m + 4, whole, b4);
  for (int i = 0; i < NQ; ++i) d[i] = _mm512_add_ps(b0[i], b4[i]);  // C_m
  lane_pair<NQ, kWhole>(kt, q, m + 2, whole, b0);
  lane_pair<NQ, kWhole>(kt, q, m + 6, whole, b4);
  for (int i = 0; i < NQ; ++i) d[i] = _mm512_add_ps(d[i], _mm512_add_ps(b0[i], b4[i]));  // C_m + C_{m+2}
}

template <int NQ, std::size_t kWhole>
void scores_transposed_nq(const float* kt, const float* const* q, int n_rows, std::size_t hd, float scale, float* out,
                          std::size_t out_stride) {
  const std::size_t whole = hd / kLanes * kLanes;
  __m512 s[NQ], d1[NQ];
  lane_quad<NQ, kWhole>(kt, q, 0, whole, s);
  lane_quad<NQ, kWhole>(kt, q, 1, whole, d1);
  for (int i = 0; i < NQ; ++i) s[i] = _mm512_add_ps(s[i], d1[i]);  // D_0 + D_1
  for (std::size_t t = whole; t < hd; ++t) {
    const __m512 kv = _mm512_load_ps(kt + t * kLanes);
    for (int i = 0; i < NQ; ++i) s[i] = _mm512_fmadd_ps(kv, _mm512_set1_ps(q[i][t]), s[i]);
  }
  const __mmask16 rows = tail_mask(static_cast<std::size_t>(n_rows));
  for (int i = 0; i < NQ; ++i)
    _mm512_mask_storeu_ps(out + static_cast<std::size_t>(i) * out_stride, rows,
                          _mm512_mul_ps(s[i], _mm512_set1_ps(scale)));
}

// Every query of a transposed chunk, in register tiles of kTile.
template <std::size_t kWhole>
void scores_transposed_all(const float* kt, const float* q, std::size_t q_stride, int n_q, int n_rows, std::size_t hd,
                           float scale, float* out, std::size_t out_stride) {
  constexpr int kTile = 4;
  const float* qs[kTile];
  int i = 0;
  for (; i + kTile <= n_q; i += kTile) {
    for (int t = 0; t < kTile; ++t) qs[t] = q + static_cast<std::size_t>(i + t) * q_stride;
    scores_transposed_nq<kTile, kWhole>(kt, qs, n_rows, hd, scale, out + static_cast<std::size_t>(i) * out_stride,
                                        out_stride);
  }
  for (; i < n_q; ++i) {
    qs[0] = q + static_cast<std::size_t>(i) * q_stride;
    scores_transposed_nq<1, kWhole>(kt, qs, n_rows, hd, scale, out + static_cast<std::size_t>(i) * out_stride,
                                    out_stride);
  }
}

template <class Load>
void scores_transposed(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride,
                       int n_q, std::size_t hd, float scale, float* out, std::size_t out_stride) {
  // Per thread rather than on the stack: a 16 KB frame would hide the
  // callers from profilers that copy a few KB of stack per sample.
  alignas(64) static thread_local float kt[kMaxTransposedHd * kLanes];
  transpose_rows<Load>(k, k_stride, n_rows, hd, kt);
  // The common head sizes unrolled; the same operations either way.
  switch (hd / kLanes) {
    case 4: return scores_transposed_all<64>(kt, q, q_stride, n_q, n_rows, hd, scale, out, out_stride);
    case 8: return scores_transposed_all<128>(kt, q, q_stride, n_q, n_rows, hd, scale, out, out_stride);
    default: return scores_transposed_all<0>(kt, q, q_stride, n_q, n_rows, hd, scale, out, out_stride);
  }
}

template <class Load>
void scores(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride, int n_q,
            std::size_t hd, float scale, float* out, std::size_t out_stride) {
  if (n_q >= kMinTransposedQueries && hd <= kMaxTransposedHd)
    return scores_transposed<Load>(k, k_stride, n_rows, q, q_stride, n_q, hd, scale, out, out_stride);
  constexpr int kTile = 8;
  for (; n_q > kTile; n_q -= kTile) {
    scores_nq<kTile, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    q += kTile * q_stride;
    out += kTile * out_stride;
  }
  switch (n_q) {
    case 1: return scores_nq<1, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 2: return scores_nq<2, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 3: return scores_nq<3, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 4: return scores_nq<4, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 5: return scores_nq<5, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 6: return scores_nq<6, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    case 7: return scores_nq<7, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
    default: return scores_nq<8, Load>(k, k_stride, n_rows, q, q_stride, hd, scale, out, out_stride);
  }
}

// The lanes of attn_pv_kernel.h: one register holds 16 of a row's elements.
struct PvZmm {
  using Reg = __m512;
  static constexpr std::size_t kWidth = 16;
  static constexpr int kPvTile = 8;
  static constexpr int kPvAccumulators = 16;  // 8 queries x 32 dims, 8 broadcasts and a V vector of 32 registers
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static bool any_zero(Reg v) { return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_EQ_OQ) != 0; }
};

}  // namespace
}  // namespace clm

#include "kernels/attn_pv_kernel.h"

namespace clm {
namespace {

void f32_to_f16_row(const float* x, std::byte* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), kRound));
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <class Load>
constexpr KvRowKernels row_kernels() {
  return {.scores = scores<Load>, .pv = pv<PvZmm, Load>, .pv_queries = pv_queries<PvZmm, Load>};
}

}  // namespace
}  // namespace clm

#pragma GCC diagnostic pop
CLM_TARGET_END

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const AttnKernels& avx512_attn_kernels() {
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
