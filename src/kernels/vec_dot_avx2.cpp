// The AVX2+FMA+F16C path of vec_dot.h. Only this file is compiled for those
// instructions (a target pragma), and it runs only after cpu_features has
// confirmed them, so the rest of the build stays baseline x86-64.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/element_read.h"
#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "kernels/target_region.h"
#include "util/half.h"

CLM_TARGET_BEGIN("avx2,fma,f16c")

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

// The lanes of float_tile_kernel.h: one 8-lane accumulator per output, fma
// per 8-element step, folded 8 -> 4 -> 2 -> 1 in a fixed order.
struct Ymm {
  using Reg = __m256;
  static constexpr std::size_t kLanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load_x(const float* p) { return _mm256_loadu_ps(p); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(Reg v) { return hsum(v); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
};

}  // namespace
}  // namespace clm

#include "kernels/float_tile_kernel.h"
#include "kernels/panel_tile_kernel.h"
#include "kernels/panel_tile_avx2.h"

namespace clm {
namespace {

// Register tiles of 4 weight rows x 3 activation rows: 12 accumulators, 3
// activation vectors and one weight vector fill the 16 ymm registers. Decode
// (one activation row) takes 8 weight rows at once for 8 independent chains.
constexpr int kRegW = 4, kRegX = 3, kRegW1 = 8;
static_assert(kTileW % kRegW == 0 && kTileX % kRegX == 0 && kTileW % kRegW1 == 0);

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return float_dot<Ymm, LoadF32>(w, x, n); }
void dot4_f32(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Ymm, LoadF32>(w, x, x_stride, n, out);
}
constexpr TileFn tile_f32 = float_tile<Ymm, LoadF32, kRegW, kRegX, kRegW1>;

// Panel tiles of 1 panel (2 ymm) x 6 activation rows (panel_tile_avx2.h):
// 12 accumulators, 2 panel vectors and a broadcast of the 16 ymm registers.
// Decode walks 4 panels at once: 8 independent chains.
constexpr int kPanelRegP1 = 4;
constexpr PanelTileFn panel_f16 = panel_tile_avx2<LoadF16, kPanelRegP1>;
constexpr PanelTileFn panel_bf16 = panel_tile_avx2<LoadBf16, kPanelRegP1>;

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

void f16_to_f32_row(const std::byte* v, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadF16{}(v + 2 * i));
  for (; i < n; ++i) dst[i] = LoadF16{}.scalar(v + 2 * i);
}

// Rounds half away from zero as std::round does: truncate, then step away
// from zero where the (exact) remainder is at least a half.
inline __m256 round_half_away(__m256 q) {
  const __m256 t = _mm256_round_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(q, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(q, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

void quantize_q8_0_row(const float* src, std::byte* dst, std::size_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* x = src + b * kQuantBlockElems;
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      // The data first: where it is NaN, max keeps the running value, as fmax does.
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[i], vid)));
    // Packing works within 128-bit lanes; the permute puts the bytes back in order.
    const __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i bytes =
        _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    std::byte* out = dst + b * sizeof(BlockQ8_0);
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(out, &dh, sizeof dh);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + sizeof dh), bytes);
  }
}

inline __m256i k_scaled_add256(__m256i acc, __m256i pairs, __m256i scales) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
}

}  // namespace
}  // namespace clm

#include "kernels/kquant_simd.h"
#include "kernels/kquant_dot256.h"
#include "kernels/quant_tile_avx2.h"

CLM_TARGET_END

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const VecKernels& avx2_vec_kernels() {
  static constexpr VecKernels k{.dot_f32 = dot_f32,
                                .dot4_f32 = dot4_f32,
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
                                .tile_f32 = tile_f32,
                                .tile_q8_0 = tile_q8_0,
                                .tile_q4_0 = tile_q4_0,
                                .tile_q4_k = nullptr,
                                .tile_q5_k = nullptr,
                                .tile_q6_k = nullptr,
                                .panel_f16 = panel_f16,
                                .panel_bf16 = panel_bf16,
                                .f16_to_f32_row = f16_to_f32_row,
                                .quantize_q8_0_row = quantize_q8_0_row};
  return k;
}

}  // namespace clm
