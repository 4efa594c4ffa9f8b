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

namespace clm {

namespace {

constexpr std::size_t kLanes = 8;
// Rows taken through all of a row's chunks together: a chunk's cos/sin
// vectors are built once per tile, and the tile's rows stay in L1 whatever
// n_rows is.
constexpr int kRowTile = 16;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

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

// One pair (elements ia, ib of a row), the reference's expression.
template <class E>
inline void rotate_pair(const std::byte* s, std::byte* d, std::size_t ia, std::size_t ib, float c, float sn) {
  const float x0 = E::load1(s + ia * E::kBytes);
  const float x1 = E::load1(s + ib * E::kBytes);
  E::store1(d + ia * E::kBytes, std::fma(x0, c, x1 * -sn));
  E::store1(d + ib * E::kBytes, std::fma(x1, c, x0 * sn));
}

// Pairs (2i, 2i+1). Per element: fma(x, C, swapped(x) * S) with C = cos of
// the element's pair and S = -sin on the first element of a pair, +sin on the
// second: lane for lane the reference's two expressions.
template <class E>
void rotate_adjacent(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                     const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t n_rot = static_cast<std::size_t>(params.n_rot);
  const std::size_t whole = n_rot / kLanes * kLanes;
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256 neg_first = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t j = 0; j < whole; j += kLanes) {
      const __m256 c = _mm256_permutevar8x32_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(&table.cos[j / 2])), dup);
      const __m256 s = _mm256_xor_ps(
          _mm256_permutevar8x32_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(&table.sin[j / 2])), dup),
          neg_first);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + j * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const __m256 x = E::load(s_row);
        const __m256 swapped = _mm256_permute_ps(x, 0xB1);
        E::store(d_row, _mm256_fmadd_ps(x, c, _mm256_mul_ps(swapped, s)));
      }
    }
    for (int r = r0; r < r1 && whole < n_rot; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t k = whole; k < n_rot; k += 2)
        rotate_pair<E>(src + off, dst + off, k, k + 1, table.cos[k / 2], table.sin[k / 2]);
    }
  }
}

// Pairs (i, i + n_rot/2): the halves are two vectors and cos/sin load as is.
template <class E>
void rotate_neox(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                 const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t half = static_cast<std::size_t>(params.n_rot / 2);
  const std::size_t hi = half * E::kBytes;  // from a pair's first element to its second
  const std::size_t whole = half / kLanes * kLanes;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t i = 0; i < whole; i += kLanes) {
      const __m256 c = _mm256_loadu_ps(&table.cos[i]);
      const __m256 s = _mm256_loadu_ps(&table.sin[i]);
      const __m256 neg_s = _mm256_xor_ps(s, sign);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + i * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const __m256 x0 = E::load(s_row);
        const __m256 x1 = E::load(s_row + hi);
        E::store(d_row, _mm256_fmadd_ps(x0, c, _mm256_mul_ps(x1, neg_s)));
        E::store(d_row + hi, _mm256_fmadd_ps(x1, c, _mm256_mul_ps(x0, s)));
      }
    }
    for (int r = r0; r < r1 && whole < half; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t i = whole; i < half; ++i)
        rotate_pair<E>(src + off, dst + off, i, i + half, table.cos[i], table.sin[i]);
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

void rope_shift_rotate_avx2(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table) {
  if (type == KvType::F16)
    rotate<F16>(src, dst, n_rows, stride_elems, params, table);
  else
    rotate<F32>(src, dst, n_rows, stride_elems, params, table);
}

}  // namespace clm

CLM_TARGET_END
