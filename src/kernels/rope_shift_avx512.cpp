// The AVX-512 (F+BW+VL) path of rope_shift_paths.h: sixteen elements per
// vector, and a masked last vector instead of element-by-element tails, so
// that short heads (8, 48, 80 dimensions) stay vectorised. Compiled for those
// instructions by a target pragma and run only after cpu_features has
// confirmed them (and AVX2+FMA+F16C).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/rope_shift_paths.h"
#include "kernels/target_region.h"

CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own conversions read a deliberately undefined register, which
// -Wmaybe-uninitialized reports once the intrinsics are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a warning only GCC has
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;
// As in the AVX2 path: cos/sin vectors built once per tile of rows, and the
// tile's rows stay in L1.
constexpr int kRowTile = 16;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __mmask16 first_n(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Masked-off lanes load as 0 and are never stored.
struct F32 {
  static constexpr std::size_t kBytes = 4;
  static __m512 load(const std::byte* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(std::byte* p, __mmask16 m, __m512 v) { _mm512_mask_storeu_ps(p, m, v); }
};
struct F16 {
  static constexpr std::size_t kBytes = 2;
  static __m512 load(const std::byte* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
  static void store(std::byte* p, __mmask16 m, __m512 v) { _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, kRound)); }
};

inline __m512 flip_sign(__m512 v, __m512i sign) {
  // _mm512_xor_ps is AVX512DQ, which this path does not require.
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign));
}

// Pairs (2i, 2i+1): per element fma(x, C, swapped(x) * S), C = cos of the
// element's pair, S = -sin on a pair's first element and +sin on its second.
template <class E>
void rotate_adjacent(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                     const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t n_rot = static_cast<std::size_t>(params.n_rot);
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i neg_first = _mm512_setr_epi32(INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0,
                                              INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0);
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t j = 0; j < n_rot; j += kLanes) {
      const std::size_t n = std::min(kLanes, n_rot - j);
      const __mmask16 pairs = first_n(n / 2);
      const __mmask16 elems = first_n(n);
      const __m512 c = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(pairs, &table.cos[j / 2]));
      const __m512 s = flip_sign(_mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(pairs, &table.sin[j / 2])), neg_first);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + j * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const __m512 x = E::load(s_row, elems);
        const __m512 swapped = _mm512_permute_ps(x, 0xB1);
        E::store(d_row, elems, _mm512_fmadd_ps(x, c, _mm512_mul_ps(swapped, s)));
      }
    }
  }
}

// Pairs (i, i + n_rot/2): the halves are two vectors and cos/sin load as is.
template <class E>
void rotate_neox(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                 const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t half = static_cast<std::size_t>(params.n_rot / 2);
  const std::size_t hi = half * E::kBytes;  // from a pair's first element to its second
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t i = 0; i < half; i += kLanes) {
      const __mmask16 m = first_n(std::min(kLanes, half - i));
      const __m512 c = _mm512_maskz_loadu_ps(m, &table.cos[i]);
      const __m512 s = _mm512_maskz_loadu_ps(m, &table.sin[i]);
      const __m512 neg_s = flip_sign(s, sign);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + i * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const __m512 x0 = E::load(s_row, m);
        const __m512 x1 = E::load(s_row + hi, m);
        E::store(d_row, m, _mm512_fmadd_ps(x0, c, _mm512_mul_ps(x1, neg_s)));
        E::store(d_row + hi, m, _mm512_fmadd_ps(x1, c, _mm512_mul_ps(x0, s)));
      }
    }
  }
}

template <class E>
void rotate(const std::byte* src, std::byte* dst, int n_rows, std::size_t stride_elems, const RopeShiftParams& params,
            const RopeShiftTable& table) {
  const std::size_t row_bytes = stride_elems * E::kBytes;
  if (params.neox)
    rotate_neox<E>(src, dst, n_rows, row_bytes, params, table);
  else
    rotate_adjacent<E>(src, dst, n_rows, row_bytes, params, table);
}

}  // namespace

void rope_shift_rotate_avx512(const std::byte* src, std::byte* dst, KvType type, int n_rows,
                              std::size_t stride_elems, const RopeShiftParams& params, const RopeShiftTable& table) {
  if (type == KvType::F16)
    rotate<F16>(src, dst, n_rows, stride_elems, params, table);
  else
    rotate<F32>(src, dst, n_rows, stride_elems, params, table);
}

}  // namespace clm

#pragma GCC diagnostic pop
CLM_TARGET_END
