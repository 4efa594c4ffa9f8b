// Register tiles (vec_dot.h's TileFn) of Q8_0 and Q4_0 weights against Q8_0
// activations for the Avx512 and Avx512Vnni paths. Included only by their two
// sources, inside their target regions (after <algorithm>, <array>,
// <utility> and quant_blocks.h), so each path gets its own copy compiled for
// its own instructions; each then defines the integer steps for its
// instructions (see "Integer steps" below) and instantiates qt_tile with them.
//
// Every output keeps exactly the float steps of vec_dot_avx512.cpp's
// block_dot: per block pair, 16 exact int32 sums (lane k holds elements
// 4k .. 4k + 3 of the 64) converted to float, times the lanes'
// d_w * d_x, fused-added into the output's own 16-lane accumulator; an odd
// last block's 8 sums times its d_w * d_x into an 8-lane one; then a fixed
// fold and sum. The integer sums are exact whichever instructions produce
// them, so the tile may take any integer route, and the scale products are
// formed lane-wise from per-row vectors: the same f32 products as the dot's
// scalar ones, at one multiply per output instead of two conversions, a
// multiply, two broadcasts and a blend.
#pragma once

namespace clm {
namespace {

// Integer steps, a struct per weight type with:
//   kWBytes      bytes per weight block
//   W, X         one weight / activation block pair, prepared for dot;
//                weights(p) and acts(p) prepare the pair of blocks at p
//   dot(w, x)    the 16 exact int32 sums of the pair
//   tail(p)      the 32 signed weight values of the one block at p
// A W is made once per tile row and block pair and used for every activation
// row; an X once per activation row and used for every weight row.

inline __m256i qt_load256(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i qt_load128(const std::byte* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Quants of the Q8_0 blocks at p and p + 34 in one register.
inline __m512i qt_q8_pair(const std::byte* p) {
  constexpr std::size_t kQs = offsetof(BlockQ8_0, qs);
  return _mm512_inserti64x4(_mm512_castsi256_si512(qt_load256(p + kQs)), qt_load256(p + sizeof(BlockQ8_0) + kQs), 1);
}

// The unsigned 4-bit codes (0..15, the value plus 8) of the Q4_0 blocks at p
// and p + 18, in element order: each block's 16 bytes hold elements j (low
// nibble) and j + 16 (high nibble).
inline __m512i qt_q4_codes_pair(const std::byte* p) {
  constexpr std::size_t kQs = offsetof(BlockQ4_0, qs);
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(qt_load128(p + kQs)),
                                               qt_load128(p + sizeof(BlockQ4_0) + kQs), 1);
  // 128-bit lanes [a, a, b, b]; the odd ones shift down to their high nibbles.
  const __m512i dup = _mm512_permutexvar_epi64(_mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0), _mm512_castsi256_si512(both));
  const __m512i shifted = _mm512_mask_srli_epi16(dup, 0xFF00FF00u, dup, 4);
  return _mm512_and_si512(shifted, _mm512_set1_epi8(15));
}

inline __m256i qt_q8_tail(const std::byte* p) { return qt_load256(p + offsetof(BlockQ8_0, qs)); }
inline __m256i qt_q4_tail(const std::byte* p) {
  const __m128i bytes = qt_load128(p + offsetof(BlockQ4_0, qs));
  const __m128i mask = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(bytes, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

// 32 signed bytes times 32 signed bytes -> 8 exact int32 sums, lane k the
// elements 4k .. 4k + 3 (the sign trick of the AVX2 path; the odd last block
// is rare enough not to need a faster route).
inline __m256i qt_block_dot_i32(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// [f(d0) x8, f(d1) x8] for the scales of the blocks at p and p + stride. F16C
// converts exactly, as the dot's _cvtsh_ss does.
inline __m512 qt_pair_scales(const std::byte* p, std::size_t stride) {
  const __m128i h = _mm_insert_epi16(_mm_cvtsi32_si128(block_scale_bits(p)), block_scale_bits(p + stride), 1);
  const __m512 f = _mm512_castps128_ps512(_mm_cvtph_ps(h));
  return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), f);
}

inline float qt_hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline __m256 qt_fold512(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// NW weight rows times NX activation rows, all held in registers: 16-lane
// accumulators, NX prepared activation pairs and their scales.
template <class Ints, int NW, int NX>
void qt_register_tile(const std::byte* w, std::size_t w_stride, const std::byte* x, std::size_t x_stride,
                      std::size_t n, float* y, std::size_t y_stride) {
  constexpr std::size_t kWB = Ints::kWBytes;
  constexpr std::size_t kXB = sizeof(BlockQ8_0);
  const std::size_t nb = n / kQuantBlockElems;
  __m512 acc[NW][NX];
  for (int i = 0; i < NW; ++i)
    for (int j = 0; j < NX; ++j) acc[i][j] = _mm512_setzero_ps();
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    typename Ints::X xv[NX];
    __m512 dx[NX];
    for (int j = 0; j < NX; ++j) {
      const std::byte* xb = x + static_cast<std::size_t>(j) * x_stride + b * kXB;
      xv[j] = Ints::acts(xb);
      dx[j] = qt_pair_scales(xb, kXB);
    }
    for (int i = 0; i < NW; ++i) {
      const std::byte* wb = w + static_cast<std::size_t>(i) * w_stride + b * kWB;
      const typename Ints::W wv = Ints::weights(wb);
      const __m512 dw = qt_pair_scales(wb, kWB);
      for (int j = 0; j < NX; ++j)
        acc[i][j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dx[j]), _mm512_cvtepi32_ps(Ints::dot(wv, xv[j])), acc[i][j]);
    }
  }
  __m256 tail[NW][NX];
  for (int i = 0; i < NW; ++i)
    for (int j = 0; j < NX; ++j) tail[i][j] = _mm256_setzero_ps();
  if (b < nb) {
    for (int i = 0; i < NW; ++i) {
      const std::byte* wb = w + static_cast<std::size_t>(i) * w_stride + b * kWB;
      const __m256i wv = Ints::tail(wb);
      const float dw = _cvtsh_ss(block_scale_bits(wb));
      for (int j = 0; j < NX; ++j) {
        const std::byte* xb = x + static_cast<std::size_t>(j) * x_stride + b * kXB;
        const __m256 p = _mm256_cvtepi32_ps(qt_block_dot_i32(wv, qt_load256(xb + offsetof(BlockQ8_0, qs))));
        tail[i][j] = _mm256_mul_ps(_mm256_set1_ps(dw * _cvtsh_ss(block_scale_bits(xb))), p);
      }
    }
  }
  for (int i = 0; i < NW; ++i)
    for (int j = 0; j < NX; ++j)
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i)] =
          qt_hsum256(_mm256_add_ps(qt_fold512(acc[i][j]), tail[i][j]));
}

// Register tiles up to 4 x 4: sixteen accumulators leave the other half of
// the 32 registers for the prepared pairs and scales. A single activation
// row (decode) takes its weight rows one at a time instead: decode streams
// every weight byte from memory once, and one sequential stream is what the
// hardware prefetchers follow best, while several rows read side by side
// measured clearly slower there; one row still gains the cheaper integer and
// scale steps.
constexpr int kQRegW = 4;
constexpr int kQRegX = 4;

using QRegisterTileFn = void (*)(const std::byte*, std::size_t, const std::byte*, std::size_t, std::size_t, float*,
                                 std::size_t);

template <class Ints, int... I>
constexpr std::array<QRegisterTileFn, sizeof...(I)> qt_shapes(std::integer_sequence<int, I...>) {
  return {qt_register_tile<Ints, I / kQRegX + 1, I % kQRegX + 1>...};
}

// The TileFn: any nw x nx, walked in register tiles of at most kQRegW x kQRegX
// (1 x 1 for a single activation row).
template <class Ints>
void qt_tile(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
             std::size_t n, float* y, std::size_t y_stride) {
  static constexpr auto kShapes = qt_shapes<Ints>(std::make_integer_sequence<int, kQRegW * kQRegX>{});
  for (int j = 0; j < nx; j += kQRegX) {
    const int rx = std::min(kQRegX, nx - j);
    const int step_w = nx == 1 ? 1 : kQRegW;
    for (int i = 0; i < nw; i += step_w) {
      const int rw = std::min(step_w, nw - i);
      kShapes[static_cast<std::size_t>((rw - 1) * kQRegX + (rx - 1))](
          w + static_cast<std::size_t>(i) * w_stride, w_stride, x + static_cast<std::size_t>(j) * x_stride, x_stride,
          n, y + static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i), y_stride);
    }
  }
}

}  // namespace
}  // namespace clm
