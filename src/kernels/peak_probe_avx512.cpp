// The AVX-512 probes: 512-bit fmas; byte products as the AVX-512 Q8_0 / Q4_0
// tiles make them, maddubs + madd + add without VNNI, one vpdpbusd with it
// (64 byte products per instruction). Each runs only after cpu_features has
// confirmed its instructions.
#include <immintrin.h>

#include "kernels/peak_probe.h"
#include "kernels/target_region.h"

CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl")
// GCC 12's own AVX-512 extract intrinsics trip these (as in vec_dot_avx512.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a warning only GCC has
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace clm {

namespace {

// Sixteen accumulators of the 32 zmm registers: more chains than fma latency
// x pipes on current cores, with room for the operands.
constexpr int kChains = 16;

double fma_zmm(std::uint64_t iterations, float* sink) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.25f * static_cast<float>(k + 1));
  __m512 a = _mm512_set1_ps(0.5f), b = _mm512_set1_ps(0.5f);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+v"(a), "+v"(b));  // opaque: nothing folds or hoists
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  *sink = _mm512_cvtss_f32(s);
  return 2.0 * 16 * kChains * static_cast<double>(iterations);
}

double maddubs_zmm(std::uint64_t iterations, float* sink) {
  __m512i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_epi32(k);
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  const __m512i ones = _mm512_set1_epi16(1);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+v"(u), "+v"(s));  // the products are recomputed every round
    for (int k = 0; k < kChains; ++k)
      acc[k] = _mm512_add_epi32(acc[k], _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), ones));
  }
  __m512i t = acc[0];
  for (int k = 1; k < kChains; ++k) t = _mm512_add_epi32(t, acc[k]);
  *sink = static_cast<float>(_mm_cvtsi128_si32(_mm512_castsi512_si128(t)));
  return 2.0 * 64 * kChains * static_cast<double>(iterations);
}

// VNNI only here, so that the compiler cannot fuse the madd + add above
// into vpdpwssd and measure something the non-VNNI path never runs. (A
// region of its own, not one nested in the other: clang does not merge the
// features of nested regions.)
CLM_TARGET_END
CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni")
double dpbusd_zmm(std::uint64_t iterations, float* sink) {
  __m512i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_epi32(k);
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+v"(u), "+v"(s));
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], u, s);
  }
  __m512i t = acc[0];
  for (int k = 1; k < kChains; ++k) t = _mm512_add_epi32(t, acc[k]);
  *sink = static_cast<float>(_mm_cvtsi128_si32(_mm512_castsi512_si128(t)));
  return 2.0 * 64 * kChains * static_cast<double>(iterations);
}
CLM_TARGET_END
CLM_TARGET_BEGIN("avx512f,avx512bw,avx512vl")

constexpr PeakLoops kAvx512{fma_zmm, "vfmadd zmm", maddubs_zmm, "vpmaddubsw + vpmaddwd zmm"};
constexpr PeakLoops kAvx512Vnni{fma_zmm, "vfmadd zmm", dpbusd_zmm, "vpdpbusd zmm"};

}  // namespace

const PeakLoops& avx512_peak_loops() { return kAvx512; }
const PeakLoops& avx512_vnni_peak_loops() { return kAvx512Vnni; }

}  // namespace clm

#pragma GCC diagnostic pop
CLM_TARGET_END
