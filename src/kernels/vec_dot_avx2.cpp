// The AVX2+FMA+F16C path of vec_dot.h. Only this file is compiled for those
// instructions (a target pragma), and it runs only after cpu_features has
// confirmed them, so the rest of the build stays baseline x86-64.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

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

// The lanes of float_tile_kernel.h: one 8-lane accumulator per output, fma
// per 8-element step, folded 8 -> 4 -> 2 -> 1 in a fixed order.
struct Ymm {
  using Reg = __m256;
  static constexpr std::size_t kLanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load_x(const float* p) { return _mm256_loadu_ps(p); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(Reg v) { return hsum(v); }
};

}  // namespace
}  // namespace clm

#include "kernels/float_tile_kernel.h"

namespace clm {
namespace {

// Register tiles of 4 weight rows x 3 activation rows: 12 accumulators, 3
// activation vectors and one weight vector fill the 16 ymm registers. Decode
// (one activation row) takes 8 weight rows at once for 8 independent chains.
constexpr int kRegW = 4, kRegX = 3, kRegW1 = 8;
static_assert(kTileW % kRegW == 0 && kTileX % kRegX == 0 && kTileW % kRegW1 == 0);

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return float_dot<Ymm, LoadF32>(w, x, n); }
float dot_f16(const std::byte* w, const float* x, std::size_t n) { return float_dot<Ymm, LoadF16>(w, x, n); }
float dot_bf16(const std::byte* w, const float* x, std::size_t n) { return float_dot<Ymm, LoadBf16>(w, x, n); }
void dot4_f32(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Ymm, LoadF32>(w, x, x_stride, n, out);
}
void dot4_f16(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Ymm, LoadF16>(w, x, x_stride, n, out);
}
void dot4_bf16(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  float_dot4<Ymm, LoadBf16>(w, x, x_stride, n, out);
}
constexpr TileFn tile_f32 = float_tile<Ymm, LoadF32, kRegW, kRegX, kRegW1>;
constexpr TileFn tile_f16 = float_tile<Ymm, LoadF16, kRegW, kRegX, kRegW1>;
constexpr TileFn tile_bf16 = float_tile<Ymm, LoadBf16, kRegW, kRegX, kRegW1>;

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

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// A k-quant weight super-block unpacked once for all activation rows: q[k]
// holds the unsigned codes of elements 32k .. 32k + 31, scale[k] the int16
// multipliers of their maddubs pair sums (one sub-block of 32, or two of 16),
// bsum_weights the int16 multipliers of the activations' 16 block sums (the
// mins of Q4_K/Q5_K, the scales of Q6_K).
struct UnpackedK {
  __m256i q[8];
  __m256i scale[8];
  __m256i bsum_weights;
  float d, dmin;
};

inline const uint8_t* bytes_at(const std::byte* block, std::size_t offset) {
  return reinterpret_cast<const uint8_t*>(block + offset);
}

template <class Block>
void unpack_k_min(const std::byte* wb, UnpackedK& u) {
  u.d = f16_to_f32(load_field<uint16_t>(wb + offsetof(Block, d)));
  u.dmin = f16_to_f32(load_field<uint16_t>(wb + offsetof(Block, dmin)));
  uint8_t sc[8], mn[8];
  unpack_k_scales(bytes_at(wb, offsetof(Block, scales)), sc, mn);
  const __m256i mask = _mm256_set1_epi8(15);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load256(wb + offsetof(Block, qs) + 32 * c);
    u.q[2 * c] = _mm256_and_si256(v, mask);
    u.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
  }
  for (int j = 0; j < 8; ++j) u.scale[j] = _mm256_set1_epi16(sc[j]);
  // Each min weighs two 16-element sums.
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn)));
  u.bsum_weights = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
}

void unpack_q4_k(const std::byte* wb, UnpackedK& u) { unpack_k_min<BlockQ4_K>(wb, u); }

void unpack_q5_k(const std::byte* wb, UnpackedK& u) {
  unpack_k_min<BlockQ5_K>(wb, u);
  const __m256i qh = load256(wb + offsetof(BlockQ5_K, qh));
  const __m256i one = _mm256_set1_epi8(1);
  // Bit j of each qh byte is the 16s bit of sub-block j; shifting 16-bit lanes
  // and masking bit 0 of every byte keeps the bytes apart.
  for (int j = 0; j < 8; ++j) {
    const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, j), one);
    u.q[j] = _mm256_or_si256(u.q[j], _mm256_slli_epi16(bit, 4));
  }
}

void unpack_q6_k(const std::byte* wb, UnpackedK& u) {
  u.d = f16_to_f32(load_field<uint16_t>(wb + offsetof(BlockQ6_K, d)));
  u.dmin = 0.0f;
  const auto* sc = reinterpret_cast<const int8_t*>(wb + offsetof(BlockQ6_K, scales));
  const __m256i mask = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3);
  auto high = [&](__m256i qh, int shift) {
    return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), three), 4);
  };
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = load256(wb + offsetof(BlockQ6_K, ql) + 64 * h);
    const __m256i l1 = load256(wb + offsetof(BlockQ6_K, ql) + 64 * h + 32);
    const __m256i qh = load256(wb + offsetof(BlockQ6_K, qh) + 32 * h);
    u.q[4 * h] = _mm256_or_si256(_mm256_and_si256(l0, mask), high(qh, 0));
    u.q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, mask), high(qh, 2));
    u.q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), mask), high(qh, 4));
    u.q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), mask), high(qh, 6));
  }
  for (int k = 0; k < 8; ++k) u.scale[k] = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
  u.bsum_weights = _mm256_cvtepi8_epi16(load128(wb + offsetof(BlockQ6_K, scales)));
}

// R activation rows against one weight row, each weight super-block unpacked
// once. Codes are unsigned (at most 63) and activations in [-127, 127], so
// maddubs never saturates; every sum after it is exact int32, and the float
// steps per super-block are the shared ones, as in the scalar reference.
template <std::size_t R, class Block, bool kMins, class Unpack>
void k_dot(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out, Unpack unpack) {
  float sum[R] = {};
  UnpackedK u;
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    unpack(w + b * sizeof(Block), u);
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* xb = xq + r * x_stride + b * sizeof(BlockQ8_K);
      const std::byte* xv = xb + offsetof(BlockQ8_K, qs);
      __m256i acc = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k)
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[k], load256(xv + 32 * k)), u.scale[k]));
      const __m256i bs = _mm256_madd_epi16(load256(xb + offsetof(BlockQ8_K, bsums)), u.bsum_weights);
      const float xd = load_field<float>(xb);
      if constexpr (kMins)
        sum[r] = accumulate_k_min(sum[r], u.d, u.dmin, xd, hsum_i32(acc), hsum_i32(bs));
      else  // codes carry +32: subtract 32 * scale * block sum
        sum[r] = accumulate_k_sym(sum[r], u.d, xd, hsum_i32(_mm256_sub_epi32(acc, _mm256_slli_epi32(bs, 5))));
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = sum[r];
}

float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot<1, BlockQ4_K, true>(w, xq, 0, n, &out, unpack_q4_k);
  return out;
}
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot<1, BlockQ5_K, true>(w, xq, 0, n, &out, unpack_q5_k);
  return out;
}
float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot<1, BlockQ6_K, false>(w, xq, 0, n, &out, unpack_q6_k);
  return out;
}
void dot4_q4_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot<4, BlockQ4_K, true>(w, xq, x_stride, n, out, unpack_q4_k);
}
void dot4_q5_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot<4, BlockQ5_K, true>(w, xq, x_stride, n, out, unpack_q5_k);
}
void dot4_q6_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot<4, BlockQ6_K, false>(w, xq, x_stride, n, out, unpack_q6_k);
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

}  // namespace
}  // namespace clm

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
                                .tile_f32 = tile_f32,
                                .tile_f16 = tile_f16,
                                .tile_bf16 = tile_bf16,
                                .tile_q8_0 = nullptr,
                                .tile_q4_0 = nullptr,
                                .tile_q4_k = nullptr,
                                .tile_q5_k = nullptr,
                                .tile_q6_k = nullptr,
                                .axpy_f32 = axpy_f32,
                                .axpy_f16 = axpy_f16,
                                .f16_to_f32_row = f16_to_f32_row};
  return k;
}

}  // namespace clm
