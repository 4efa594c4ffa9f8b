// The Avx512Vnni path: the AVX-512 table with k-quant dots whose scale
// multiply-accumulate is one vpdpwssd instead of vpmaddwd + vpaddd, and
// Q8_0 / Q4_0 tiles whose byte products are one vpdpbusd. Compiled
// for those instructions by a target pragma and chosen only after
// cpu_features has confirmed AVX-512 VNNI.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/target_region.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a warning only GCC has
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace clm {
namespace {
inline __m512i k_scaled_add512(__m512i acc, __m512i pairs, __m512i scales) { return _mm512_dpwssd_epi32(acc, pairs, scales); }
}  // namespace
}  // namespace clm

#include "kernels/kquant_simd.h"
#include "kernels/kquant_dot512.h"
#include "kernels/quant_tile_avx512.h"

namespace clm {
namespace {

// The integer steps of the quantized tiles with VNNI: vpdpbusd adds four
// unsigned-by-signed byte products to each int32 lane, with no 16-bit stage
// to saturate, starting from a value of our choosing. For Q8_0 the
// activations are the unsigned side, biased by 128 (x ^ 0x80), and every
// weight pair starts its lanes at -128 times its sums of four, which cancels
// the bias; for Q4_0 the stored codes (value + 8) are the unsigned side and
// every activation pair starts its lanes at -8 times its sums of four. Either
// way one instruction per output and block pair gives the exact sums.
struct QTileQ8 {
  static constexpr std::size_t kWBytes = sizeof(BlockQ8_0);
  struct W {
    __m512i v;
    __m512i unbias;
  };
  using X = __m512i;
  static W weights(const std::byte* p) {
    const __m512i v = qt_q8_pair(p);
    const __m512i bias = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), v);
    return {v, _mm512_sub_epi32(_mm512_setzero_si512(), bias)};
  }
  static X acts(const std::byte* p) {
    return _mm512_xor_si512(qt_q8_pair(p), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static __m512i dot(const W& w, X x) { return _mm512_dpbusd_epi32(w.unbias, x, w.v); }
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
    const __m512i sums8 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), q);
    return {q, _mm512_sub_epi32(_mm512_setzero_si512(), sums8)};
  }
  static __m512i dot(W w, const X& x) { return _mm512_dpbusd_epi32(x.minus_8_sums, w, x.q); }
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
const VecKernels& avx512_vnni_vec_kernels() {
  static const VecKernels k = [] {
    VecKernels t = avx512_vec_kernels();
    t.dot_q4_k = dot_q4_k;
    t.dot_q5_k = dot_q5_k;
    t.dot_q6_k = dot_q6_k;
    t.dot4_q4_k = dot4_q4_k;
    t.dot4_q5_k = dot4_q5_k;
    t.dot4_q6_k = dot4_q6_k;
    t.tile_q8_0 = tile_q8_0;
    t.tile_q4_0 = tile_q4_0;
    return t;
  }();
  return k;
}

}  // namespace clm
