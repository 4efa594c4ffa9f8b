// The AVX-512 (F+BW+VL) path of vec_dot.h, 16 float lanes and two quantized
// blocks per step. Compiled for those instructions by a target pragma and run
// only after cpu_features has confirmed them (and AVX2+FMA+F16C).
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
#include "kernels/target_region.h"
#include "util/half.h"

CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own 512->256 casts read a deliberately undefined register, which
// -Wuninitialized reports once the intrinsics are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a warning only GCC has
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace clm {

namespace {

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline __m256 fold512(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

inline __m128i load128(const std::byte* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m256i load256(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

struct LoadF32 {
  static constexpr std::size_t kBytes = 4;
  __m512 operator()(const std::byte* p) const { return _mm512_loadu_ps(p); }
  float scalar(const std::byte* p) const { return read_f32_element(p); }
};
struct LoadF16 {
  static constexpr std::size_t kBytes = 2;
  __m512 operator()(const std::byte* p) const { return _mm512_cvtph_ps(load256(p)); }
  float scalar(const std::byte* p) const { return read_f16_element(p); }
};
struct LoadBf16 {
  static constexpr std::size_t kBytes = 2;
  __m512 operator()(const std::byte* p) const {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
  }
  float scalar(const std::byte* p) const { return read_bf16_element(p); }
};

// The lanes of float_tile_kernel.h: one 16-lane accumulator per output, fma
// per 16-element step, folded 16 -> 8 -> 4 -> 2 -> 1 in a fixed order.
struct Zmm {
  using Reg = __m512;
  static constexpr std::size_t kLanes = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load_x(const float* p) { return _mm512_loadu_ps(p); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(Reg v) { return hsum256(fold512(v)); }
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
};

}  // namespace
}  // namespace clm

#include "kernels/float_tile_kernel.h"
#include "kernels/panel_tile_kernel.h"

namespace clm {
namespace {

// Register tiles of 4 weight rows x 6 activation rows: 24 accumulators, 6
// activation vectors and one weight vector of the 32 zmm registers, 10 loads
// (4 conversions) per 24 fmas. Decode (one activation row) takes 8 weight
// rows at once: 8 independent chains and 8 weight streams.
constexpr int kRegW = 4, kRegX = 6, kRegW1 = 8;
static_assert(kTileW % kRegW == 0 && kTileX % kRegX == 0 && kTileW % kRegW1 == 0);

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return float_dot<Zmm, LoadF32>(w, x, n); }
void dot4_f32(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Zmm, LoadF32>(w, x, x_stride, n, out);
}
constexpr TileFn tile_f32 = float_tile<Zmm, LoadF32, kRegW, kRegX, kRegW1>;

// Panel tiles of 2 panels x 12 activation rows: 24 accumulators, 2 panel
// vectors and a broadcast of the 32 zmm registers, 2 conversions and 12
// broadcasts per 24 fmas. Decode walks 8 panels at once: 8 independent
// chains, 8 sequential streams.
constexpr int kPanelRegP = 2, kPanelRegX = 12, kPanelRegP1 = 8;
constexpr PanelTileFn panel_f16 = panel_tile<Zmm, LoadF16, kPanelRegP, kPanelRegX, kPanelRegP1>;
constexpr PanelTileFn panel_bf16 = panel_tile<Zmm, LoadBf16, kPanelRegP, kPanelRegX, kPanelRegP1>;

// Two blocks (64 signed bytes each side) -> 16 exact int32 partial sums, the
// low 8 from the first block. As in the AVX2 path, |w| is the unsigned operand
// of maddubs and x takes w's sign (negated under the mask of w's sign bits).
inline __m512i pair_dot_i32(__m512i w, __m512i x) {
  const __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  const __m512i pairs = _mm512_maddubs_epi16(_mm512_abs_epi8(w), sx);
  return _mm512_madd_epi16(pairs, _mm512_set1_epi16(1));
}
inline __m256i block_dot_i32(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

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

// Block pairs into a 16-lane accumulator; an odd last block into an 8-lane one;
// both folded the same way for every n with the same block count. R
// activation rows (x_stride bytes apart) share each unpacked weight pair;
// every output still sees exactly the operations of the R = 1 case.
template <std::size_t R, std::size_t kWBytes, class Unpack>
void block_dot(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out,
               Unpack unpack) {
  constexpr std::size_t kXBytes = sizeof(BlockQ8_0);
  const std::size_t nb = n / kQuantBlockElems;
  __m512 acc[R];
  __m256 tail[R];
  for (std::size_t r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    tail[r] = _mm256_setzero_ps();
  }
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const std::byte* w0 = w + b * kWBytes;
    const std::byte* w1 = w0 + kWBytes;
    const __m512i wv = join(unpack(w0), unpack(w1));
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* x0 = xq + r * x_stride + b * kXBytes;
      const std::byte* x1 = x0 + kXBytes;
      const __m512i p = pair_dot_i32(wv, join(unpack_q8(x0), unpack_q8(x1)));
      const __m512 d = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(scale(w0, x0)), _mm512_set1_ps(scale(w1, x1)));
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(p), acc[r]);
    }
  }
  if (b < nb) {
    const std::byte* wb = w + b * kWBytes;
    const __m256i wv = unpack(wb);
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* xb = xq + r * x_stride + b * kXBytes;
      const __m256 p = _mm256_cvtepi32_ps(block_dot_i32(wv, unpack_q8(xb)));
      tail[r] = _mm256_mul_ps(_mm256_set1_ps(scale(wb, xb)), p);
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = hsum256(_mm256_add_ps(fold512(acc[r]), tail[r]));
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
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, LoadF16{}(v + 2 * i));
  for (; i < n; ++i) dst[i] = LoadF16{}.scalar(v + 2 * i);
}

// Rounds half away from zero as std::round does: truncate, then step away
// from zero where the (exact) remainder is at least a half.
inline __m512 round_half_away(__m512 q) {
  const __m512 t = _mm512_roundscale_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 step = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(q, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(q), _mm512_set1_epi32(INT32_MIN)),
                      _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  return _mm512_mask_add_ps(t, step, t, one);
}

void quantize_q8_0_row(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* x = src + b * kQuantBlockElems;
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    // The data first: where it is NaN, max keeps the running value, as fmax does.
    const __m512 amax = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
    const float d = _mm512_reduce_max_ps(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    std::byte* out = dst + b * sizeof(BlockQ8_0);
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(out, &dh, sizeof dh);
    const __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v0, vid)));
    const __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v1, vid)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + sizeof dh), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + sizeof dh + 16), _mm512_cvtsepi32_epi8(q1));
  }
}

inline __m512i k_scaled_add512(__m512i acc, __m512i pairs, __m512i scales) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, scales));
}

}  // namespace
}  // namespace clm

#include "kernels/kquant_simd.h"
#include "kernels/kquant_dot512.h"
#include "kernels/quant_tile_avx512.h"

namespace clm {
namespace {

// The integer steps of the quantized tiles without VNNI: maddubs wants an
// unsigned operand, so Q8_0 weights give |w| and their sign mask (x is
// negated where w < 0, as in block_dot), while Q4_0 codes are unsigned as
// stored and the -8 comes back as 8 times x's sums of four, made once per
// activation pair. Pair sums stay within int16: |w| <= 128 and codes <= 15
// against x in [-127, 127].
struct QTileQ8 {
  static constexpr std::size_t kWBytes = sizeof(BlockQ8_0);
  struct W {
    __m512i abs;
    __mmask64 neg;
  };
  using X = __m512i;
  static W weights(const std::byte* p) {
    const __m512i v = qt_q8_pair(p);
    return {_mm512_abs_epi8(v), _mm512_movepi8_mask(v)};
  }
  static X acts(const std::byte* p) { return qt_q8_pair(p); }
  static __m512i dot(const W& w, X x) {
    const __m512i sx = _mm512_mask_sub_epi8(x, w.neg, _mm512_setzero_si512(), x);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w.abs, sx), _mm512_set1_epi16(1));
  }
  static __m256i tail(const std::byte* p) { return qt_q8_tail(p); }
};

struct QTileQ4 {
  static constexpr std::size_t kWBytes = sizeof(BlockQ4_0);
  using W = __m512i;
  struct X {
    __m512i q;
    __m512i minus_8_sums;
  };
  static W weights(const std::byte* p) { return qt_q4_codes_pair(p); }
  static X acts(const std::byte* p) {
    const __m512i q = qt_q8_pair(p);
    const __m512i ones16 = _mm512_set1_epi16(1);
    const __m512i sums = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(1), q), ones16);
    return {q, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 3))};
  }
  static __m512i dot(W w, const X& x) {
    return _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(w, x.q), _mm512_set1_epi16(1)), x.minus_8_sums);
  }
  static __m256i tail(const std::byte* p) { return qt_q4_tail(p); }
};

void tile_q8_0(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
               std::size_t n, float* y, std::size_t y_stride) {
  qt_tile<QTileQ8>(w, w_stride, nw, x, x_stride, nx, n, y, y_stride);
}
void tile_q4_0(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
               std::size_t n, float* y, std::size_t y_stride) {
  qt_tile<QTileQ4>(w, w_stride, nw, x, x_stride, nx, n, y, y_stride);
}

}  // namespace
}  // namespace clm

#pragma GCC diagnostic pop
CLM_TARGET_END

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const VecKernels& avx512_vec_kernels() {
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
