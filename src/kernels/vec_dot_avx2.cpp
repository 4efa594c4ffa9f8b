// The AVX2+FMA+F16C path of vec_dot.h. Only this file is compiled for those
// instructions (a target pragma), and it runs only after cpu_features has
// confirmed them, so the rest of the build stays baseline x86-64.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/element_read.h"
#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace clm {

namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m128i load128(const std::byte* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m256i load256(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

struct LoadF32 {
  static constexpr std::size_t kBytes = 4;
  __m256 operator()(const std::byte* p) const { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  float scalar(const std::byte* p) const { return read_f32_element(p); }
};
struct LoadF16 {
  static constexpr std::size_t kBytes = 2;
  __m256 operator()(const std::byte* p) const { return _mm256_cvtph_ps(load128(p)); }
  float scalar(const std::byte* p) const { return read_f16_element(p); }
};
struct LoadBf16 {
  static constexpr std::size_t kBytes = 2;
  __m256 operator()(const std::byte* p) const {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
  }
  float scalar(const std::byte* p) const { return read_bf16_element(p); }
};

// Four 8-lane accumulators over 32-element steps, then 8-element steps into
// the first, a fixed combine, then the tail in order: the shape depends on n only.
template <std::size_t R, class Load>
void lane_dot_rows(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out, Load load) {
  constexpr std::size_t kB = Load::kBytes;
  __m256 acc[R][4];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (std::size_t j = 0; j < 4; ++j) {
      const __m256 wv = load(w + (i + j * 8) * kB);
      for (std::size_t r = 0; r < R; ++r)
        acc[r][j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * x_stride + i + j * 8), acc[r][j]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 wv = load(w + i * kB);
    for (std::size_t r = 0; r < R; ++r)
      acc[r][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * x_stride + i), acc[r][0]);
  }
  for (std::size_t r = 0; r < R; ++r) {
    const float* xr = x + r * x_stride;
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
    for (std::size_t t = i; t < n; ++t) sum += load.scalar(w + t * kB) * xr[t];
    out[r] = sum;
  }
}
template <class Load>
float lane_dot(const std::byte* w, const float* x, std::size_t n, Load load) {
  float out;
  lane_dot_rows<1>(w, x, 0, n, &out, load);
  return out;
}

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return lane_dot(w, x, n, LoadF32{}); }
float dot_f16(const std::byte* w, const float* x, std::size_t n) { return lane_dot(w, x, n, LoadF16{}); }
float dot_bf16(const std::byte* w, const float* x, std::size_t n) { return lane_dot(w, x, n, LoadBf16{}); }
void dot4_f32(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  lane_dot_rows<4>(w, x, x_stride, n, out, LoadF32{});
}
void dot4_f16(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  lane_dot_rows<4>(w, x, x_stride, n, out, LoadF16{});
}
void dot4_bf16(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  lane_dot_rows<4>(w, x, x_stride, n, out, LoadBf16{});
}

// 32 signed bytes times 32 signed bytes -> 8 exact int32 partial sums. maddubs
// wants an unsigned operand, so |w| carries the magnitude and x takes w's sign;
// |w| = 128 reads as unsigned 128, so every w is exact, and x in [-127, 127]
// keeps each int16 pair sum below 2 * 128 * 127 (no saturation).
inline __m256i block_dot_i32(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

inline __m256i unpack_q8(const std::byte* block) {
  return load256(reinterpret_cast<const std::byte*>(block_q8_values(block)));
}
inline __m256i unpack_q4(const std::byte* block) {
  const __m128i bytes = load128(reinterpret_cast<const std::byte*>(block_q4_nibbles(block)));
  const __m128i mask = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(bytes, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

// F16C converts exactly, as f16_to_f32 does, in one instruction instead of a
// branchy bit shuffle: this runs once per block and row.
inline float scale(const std::byte* wb, const std::byte* xb) {
  return _cvtsh_ss(block_scale_bits(wb)) * _cvtsh_ss(block_scale_bits(xb));
}

// Even blocks into acc0, odd into acc1, combined once at the end. R activation
// rows (x_stride bytes apart) share each unpacked weight block; every output
// still sees exactly the operations of the R = 1 case, so tiling never changes
// a result.
template <std::size_t R, std::size_t kWBytes, class Unpack>
void block_dot(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out,
               Unpack unpack) {
  const std::size_t nb = n / kQuantBlockElems;
  __m256 acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::byte* wb = w + b * kWBytes;
    const __m256i wv = unpack(wb);
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* xb = xq + r * x_stride + b * sizeof(BlockQ8_0);
      const __m256 p = _mm256_cvtepi32_ps(block_dot_i32(wv, unpack_q8(xb)));
      acc[r][b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(scale(wb, xb)), p, acc[r][b & 1]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
}

float dot_q8_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  block_dot<1, sizeof(BlockQ8_0)>(w, xq, 0, n, &out, unpack_q8);
  return out;
}
float dot_q4_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  block_dot<1, sizeof(BlockQ4_0)>(w, xq, 0, n, &out, unpack_q4);
  return out;
}
void dot4_q8_0(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  block_dot<4, sizeof(BlockQ8_0)>(w, xq, x_stride, n, out, unpack_q8);
}
void dot4_q4_0(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  block_dot<4, sizeof(BlockQ4_0)>(w, xq, x_stride, n, out, unpack_q4);
}

template <class Load>
void lane_axpy(float a, const std::byte* v, float* y, std::size_t n, Load load) {
  const __m256 va = _mm256_set1_ps(a);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load(v + i * Load::kBytes), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * load.scalar(v + i * Load::kBytes);
}

void axpy_f32(float a, const std::byte* v, float* y, std::size_t n) { lane_axpy(a, v, y, n, LoadF32{}); }
void axpy_f16(float a, const std::byte* v, float* y, std::size_t n) { lane_axpy(a, v, y, n, LoadF16{}); }
void f16_to_f32_row(const std::byte* v, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadF16{}(v + 2 * i));
  for (; i < n; ++i) dst[i] = LoadF16{}.scalar(v + 2 * i);
}

inline __m256i k_scaled_add256(__m256i acc, __m256i pairs, __m256i scales) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
}

}  // namespace
}  // namespace clm

#include "kernels/kquant_simd.h"
#include "kernels/kquant_dot256.h"
#include "kernels/quant_tile_avx2.h"

#pragma GCC pop_options

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const VecKernels& avx2_vec_kernels() {
  static constexpr VecKernels k{.dot_f32 = dot_f32,
                                .dot_f16 = dot_f16,
                                .dot_bf16 = dot_bf16,
                                .dot4_f32 = dot4_f32,
                                .dot4_f16 = dot4_f16,
                                .dot4_bf16 = dot4_bf16,
                                .dot_q8_0 = dot_q8_0,
                                .dot_q4_0 = dot_q4_0,
                                .dot4_q8_0 = dot4_q8_0,
                                .dot4_q4_0 = dot4_q4_0,
                                .dot_q4_k = dot_q4_k,
                                .dot_q5_k = dot_q5_k,
                                .dot_q6_k = dot_q6_k,
                                .dot4_q4_k = dot4_q4_k,
                                .dot4_q5_k = dot4_q5_k,
                                .dot4_q6_k = dot4_q6_k,
                                .tile_f32 = nullptr,
                                .tile_f16 = nullptr,
                                .tile_bf16 = nullptr,
                                .tile_q8_0 = tile_q8_0,
                                .tile_q4_0 = tile_q4_0,
                                .tile_q4_k = nullptr,
                                .tile_q5_k = nullptr,
                                .tile_q6_k = nullptr,
                                .axpy_f32 = axpy_f32,
                                .axpy_f16 = axpy_f16,
                                .f16_to_f32_row = f16_to_f32_row};
  return k;
}

}  // namespace clm
