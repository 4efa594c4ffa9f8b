// The AVX2 probe: 256-bit fmas, and the maddubs + madd + add sequence the
// AVX2 Q8_0 / Q4_0 tiles multiply bytes with (32 byte products per round).
// Runs only after cpu_features has confirmed AVX2 and FMA.
#include <immintrin.h>

#include "kernels/peak_probe.h"
#include "kernels/target_region.h"

CLM_TARGET_BEGIN("avx2,fma")

namespace clm {

namespace {

// Twelve accumulators: the 16 ymm registers hold them, the two operands and
// room for the compiler; more chains than fma latency x pipes on current cores.
constexpr int kChains = 12;

double fma_ymm(std::uint64_t iterations, float* sink) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(0.25f * static_cast<float>(k + 1));
  __m256 a = _mm256_set1_ps(0.5f), b = _mm256_set1_ps(0.5f);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+x"(a), "+x"(b));  // opaque: nothing folds or hoists
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  }
  __m256 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_ps(s, acc[k]);
  *sink = _mm256_cvtss_f32(s);
  return 2.0 * 8 * kChains * static_cast<double>(iterations);
}

double maddubs_ymm(std::uint64_t iterations, float* sink) {
  constexpr int kDotChains = 8;  // each round also needs a product register
  __m256i acc[kDotChains];
  for (int k = 0; k < kDotChains; ++k) acc[k] = _mm256_set1_epi32(k);
  __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
  const __m256i ones = _mm256_set1_epi16(1);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    asm volatile("" : "+x"(u), "+x"(s));  // the products are recomputed every round
    for (int k = 0; k < kDotChains; ++k)
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
  }
  __m256i t = acc[0];
  for (int k = 1; k < kDotChains; ++k) t = _mm256_add_epi32(t, acc[k]);
  *sink = static_cast<float>(_mm256_extract_epi32(t, 0));
  return 2.0 * 32 * kDotChains * static_cast<double>(iterations);
}

constexpr PeakLoops kAvx2{fma_ymm, "vfmadd ymm", maddubs_ymm, "vpmaddubsw + vpmaddwd ymm"};

}  // namespace

const PeakLoops& avx2_peak_loops() { return kAvx2; }

}  // namespace clm

CLM_TARGET_END
