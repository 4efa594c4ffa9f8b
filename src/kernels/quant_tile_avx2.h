// Register tiles (vec_dot.h's TileFn) of Q8_0 and Q4_0 weights against Q8_0
// activations for the Avx2 path. Included only by vec_dot_avx2.cpp, inside its
// target region (after <algorithm>, <array>, <utility> and quant_blocks.h).
//
// Every output keeps exactly the float steps of vec_dot_avx2.cpp's block_dot:
// per block, 8 exact int32 sums converted to float, times d_w * d_x,
// fused-added into the output's even- or odd-block accumulator; then the two
// added and summed. The integer sums are exact whichever instructions produce
// them, and the scale products are formed lane-wise from broadcast per-row
// scales: the same f32 products as the dot's scalar ones.
#pragma once

namespace clm {
namespace {

inline __m256i qt2_load256(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The integer steps, a struct per weight type with kWBytes, the prepared
// block types W and X, weights(p) / acts(p) to prepare the block at p, and
// dot(w, x) for its 8 exact int32 sums (lane k holds elements 4k .. 4k + 3).
// maddubs wants an unsigned operand: Q8_0 weights give |w| and x takes w's
// sign; Q4_0 codes (value + 8) are unsigned as stored and the -8 comes back as
// 8 times x's sums of four, made once per activation block. Pair sums stay
// within int16: |w| <= 128 and codes <= 15 against x in [-127, 127].
struct QTile2Q8 {
  static constexpr std::size_t kWBytes = sizeof(BlockQ8_0);
  struct W {
    __m256i v, abs;
  };
  using X = __m256i;
  static W weights(const std::byte* p) {
    const __m256i v = qt2_load256(p + offsetof(BlockQ8_0, qs));
    return {v, _mm256_sign_epi8(v, v)};
  }
  static X acts(const std::byte* p) { return qt2_load256(p + offsetof(BlockQ8_0, qs)); }
  static __m256i dot(const W& w, X x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.v)), _mm256_set1_epi16(1));
  }
};

struct QTile2Q4 {
  static constexpr std::size_t kWBytes = sizeof(BlockQ4_0);
  using W = __m256i;
  struct X {
    __m256i q, minus_8_sums;
  };
  // Elements j (low nibble) and j + 16 (high nibble) share byte j.
  static W weights(const std::byte* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ4_0, qs)));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes);
    return _mm256_and_si256(both, _mm256_set1_epi8(15));
  }
  static X acts(const std::byte* p) {
    const __m256i q = qt2_load256(p + offsetof(BlockQ8_0, qs));
    const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
    return {q, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 3))};
  }
  static __m256i dot(W w, const X& x) {
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, x.q), _mm256_set1_epi16(1)), x.minus_8_sums);
  }
};

inline float qt2_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Block b of NW weight rows times NX activation rows into accumulator K (b's parity).
template <class Ints, int NW, int NX, int K>
inline void qt2_block(const std::byte* w, std::size_t w_stride, const std::byte* x, std::size_t x_stride,
                      std::size_t b, __m256 (&acc)[NW][NX][2]) {
  constexpr std::size_t kXB = sizeof(BlockQ8_0);
  typename Ints::X xv[NX];
  __m256 dx[NX];
  for (int j = 0; j < NX; ++j) {
    const std::byte* xb = x + static_cast<std::size_t>(j) * x_stride + b * kXB;
    xv[j] = Ints::acts(xb);
    dx[j] = _mm256_set1_ps(_cvtsh_ss(block_scale_bits(xb)));
  }
  for (int i = 0; i < NW; ++i) {
    const std::byte* wb = w + static_cast<std::size_t>(i) * w_stride + b * Ints::kWBytes;
    const typename Ints::W wv = Ints::weights(wb);
    const __m256 dw = _mm256_set1_ps(_cvtsh_ss(block_scale_bits(wb)));
    for (int j = 0; j < NX; ++j)
      acc[i][j][K] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx[j]), _mm256_cvtepi32_ps(Ints::dot(wv, xv[j])), acc[i][j][K]);
  }
}

template <class Ints, int NW, int NX>
void qt2_register_tile(const std::byte* w, std::size_t w_stride, const std::byte* x, std::size_t x_stride,
                       std::size_t n, float* y, std::size_t y_stride) {
  const std::size_t nb = n / kQuantBlockElems;
  __m256 acc[NW][NX][2];
  for (int i = 0; i < NW; ++i)
    for (int j = 0; j < NX; ++j) acc[i][j][0] = acc[i][j][1] = _mm256_setzero_ps();
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    qt2_block<Ints, NW, NX, 0>(w, w_stride, x, x_stride, b, acc);
    qt2_block<Ints, NW, NX, 1>(w, w_stride, x, x_stride, b + 1, acc);
  }
  if (b < nb) qt2_block<Ints, NW, NX, 0>(w, w_stride, x, x_stride, b, acc);
  for (int i = 0; i < NW; ++i)
    for (int j = 0; j < NX; ++j)
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i)] =
          qt2_hsum(_mm256_add_ps(acc[i][j][0], acc[i][j][1]));
}

// The f32 block scales of a tile's rows, converted once per tile call: a
// register tile then takes d_w and d_x as broadcasts from memory and forms
// d_w * d_x in one vector multiply (the same f32 product as the dot's), where
// converting in passing costs each output four conversions and a shuffle per
// block.
inline void qt2_convert_scales(const std::byte* rows, std::size_t stride, int count, std::size_t block_bytes,
                               std::size_t nb, float* out) {
  for (int r = 0; r < count; ++r)
    for (std::size_t b = 0; b < nb; ++b)
      out[static_cast<std::size_t>(r) * nb + b] =
          _cvtsh_ss(block_scale_bits(rows + static_cast<std::size_t>(r) * stride + b * block_bytes));
}

// Two weight rows (w0, w1) times two activation rows (x0, x1), even and odd
// blocks in accumulators of their own as in qt2_register_tile, named so that
// they stay in registers. ws0/ws1 and xs0/xs1 are the rows' f32 scales.
template <class Ints>
void qt2_2x2(const std::byte* w0, const std::byte* w1, const float* ws0, const float* ws1, const std::byte* x0,
             const std::byte* x1, const float* xs0, const float* xs1, std::size_t nb, float* out) {
  __m256 e00 = _mm256_setzero_ps(), e01 = e00, e10 = e00, e11 = e00, o00 = e00, o01 = e00, o10 = e00, o11 = e00;
  constexpr std::size_t kXB = sizeof(BlockQ8_0), kWB = Ints::kWBytes;
  const auto step = [&](std::size_t b, __m256& a00, __m256& a01, __m256& a10, __m256& a11) {
    const typename Ints::X xv0 = Ints::acts(x0 + b * kXB), xv1 = Ints::acts(x1 + b * kXB);
    const __m256 dx0 = _mm256_broadcast_ss(xs0 + b), dx1 = _mm256_broadcast_ss(xs1 + b);
    const typename Ints::W wv0 = Ints::weights(w0 + b * kWB);
    const __m256 dw0 = _mm256_broadcast_ss(ws0 + b);
    a00 = _mm256_fmadd_ps(_mm256_mul_ps(dw0, dx0), _mm256_cvtepi32_ps(Ints::dot(wv0, xv0)), a00);
    a01 = _mm256_fmadd_ps(_mm256_mul_ps(dw0, dx1), _mm256_cvtepi32_ps(Ints::dot(wv0, xv1)), a01);
    const typename Ints::W wv1 = Ints::weights(w1 + b * kWB);
    const __m256 dw1 = _mm256_broadcast_ss(ws1 + b);
    a10 = _mm256_fmadd_ps(_mm256_mul_ps(dw1, dx0), _mm256_cvtepi32_ps(Ints::dot(wv1, xv0)), a10);
    a11 = _mm256_fmadd_ps(_mm256_mul_ps(dw1, dx1), _mm256_cvtepi32_ps(Ints::dot(wv1, xv1)), a11);
  };
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    step(b, e00, e01, e10, e11);
    step(b + 1, o00, o01, o10, o11);
  }
  if (b < nb) step(b, e00, e01, e10, e11);
  out[0] = qt2_hsum(_mm256_add_ps(e00, o00));
  out[1] = qt2_hsum(_mm256_add_ps(e01, o01));
  out[2] = qt2_hsum(_mm256_add_ps(e10, o10));
  out[3] = qt2_hsum(_mm256_add_ps(e11, o11));
}

// Several activation rows: scales converted once, then 2 x 2 register tiles;
// a tile at an odd edge reads its last row twice and drops the copy's
// results, which changes no operation of the others.
template <class Ints>
void qt2_prepared_tile(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride,
                       int nx, std::size_t n, float* y, std::size_t y_stride) {
  const std::size_t nb = n / kQuantBlockElems;
  // At most kTileW + kTileX rows of scales, kept per thread so that a steady
  // prefill allocates nothing.
  thread_local std::vector<float> scales;
  const std::size_t need = static_cast<std::size_t>(nw + nx) * nb;
  if (scales.size() < need) scales.resize(need);
  float* ws = scales.data();
  float* xs = ws + static_cast<std::size_t>(nw) * nb;
  qt2_convert_scales(w, w_stride, nw, Ints::kWBytes, nb, ws);
  qt2_convert_scales(x, x_stride, nx, sizeof(BlockQ8_0), nb, xs);
  for (int j = 0; j < nx; j += 2) {
    const int j1 = std::min(j + 1, nx - 1);
    for (int i = 0; i < nw; i += 2) {
      const int i1 = std::min(i + 1, nw - 1);
      float out[4];
      qt2_2x2<Ints>(w + static_cast<std::size_t>(i) * w_stride, w + static_cast<std::size_t>(i1) * w_stride,
                    ws + static_cast<std::size_t>(i) * nb, ws + static_cast<std::size_t>(i1) * nb,
                    x + static_cast<std::size_t>(j) * x_stride, x + static_cast<std::size_t>(j1) * x_stride,
                    xs + static_cast<std::size_t>(j) * nb, xs + static_cast<std::size_t>(j1) * nb, nb, out);
      float* yj = y + static_cast<std::size_t>(j) * y_stride;
      yj[i] = out[0];
      if (i1 > i) yj[i1] = out[2];
      if (j1 > j) {
        float* yj1 = y + static_cast<std::size_t>(j1) * y_stride;
        yj1[i] = out[1];
        if (i1 > i) yj1[i1] = out[3];
      }
    }
  }
}

// Sixteen registers hold eight accumulators (four outputs, 2 x 2) with room
// for the prepared blocks. A single activation row (decode) takes its weight
// rows one at a time, one sequential stream from memory (see kQRegW in
// quant_tile_avx512.h).
constexpr int kQ2RegW = 2;
constexpr int kQ2RegX = 2;

using Q2RegisterTileFn = void (*)(const std::byte*, std::size_t, const std::byte*, std::size_t, std::size_t, float*,
                                  std::size_t);

template <class Ints, int... I>
constexpr std::array<Q2RegisterTileFn, sizeof...(I)> qt2_shapes(std::integer_sequence<int, I...>) {
  return {qt2_register_tile<Ints, I / kQ2RegX + 1, I % kQ2RegX + 1>...};
}

// The TileFn: any nw x nx, walked in register tiles of at most kQ2RegW x
// kQ2RegX (1 x 1 for a single activation row).
template <class Ints>
void qt2_tile(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
              std::size_t n, float* y, std::size_t y_stride) {
  static constexpr auto kShapes = qt2_shapes<Ints>(std::make_integer_sequence<int, kQ2RegW * kQ2RegX>{});
  const int step_w = nx == 1 ? 1 : kQ2RegW;
  for (int j = 0; j < nx; j += kQ2RegX) {
    const int rx = std::min(kQ2RegX, nx - j);
    for (int i = 0; i < nw; i += step_w) {
      const int rw = std::min(step_w, nw - i);
      kShapes[static_cast<std::size_t>((rw - 1) * kQ2RegX + (rx - 1))](
          w + static_cast<std::size_t>(i) * w_stride, w_stride, x + static_cast<std::size_t>(j) * x_stride, x_stride,
          n, y + static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i), y_stride);
    }
  }
}

void tile_q8_0(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
               std::size_t n, float* y, std::size_t y_stride) {
  if (nx > 1) return qt2_prepared_tile<QTile2Q8>(w, w_stride, nw, x, x_stride, nx, n, y, y_stride);
  qt2_tile<QTile2Q8>(w, w_stride, nw, x, x_stride, nx, n, y, y_stride);
}
void tile_q4_0(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
               std::size_t n, float* y, std::size_t y_stride) {
  qt2_tile<QTile2Q4>(w, w_stride, nw, x, x_stride, nx, n, y, y_stride);
}

}  // namespace
}  // namespace clm
