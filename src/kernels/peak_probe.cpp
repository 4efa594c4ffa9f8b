// The scalar probe and the choice of table per path.
#include "kernels/peak_probe.h"

namespace clm {

namespace {

// Baseline x86-64 has no fused multiply-add: a multiply and an add per lane
// of two-wide SSE registers (the scalar path's dots are compiled this way).
constexpr int kChains = 8;

double scalar_fma(std::uint64_t iterations, float* sink) {
  float acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = 0.25f * static_cast<float>(k + 1);
  float a = 0.5f, b = 0.5f;
  for (std::uint64_t it = 0; it < iterations; ++it) {
    // Opaque to the optimizer: a and b may have changed, so nothing is
    // folded or hoisted out of the loop.
    asm volatile("" : "+x"(a), "+x"(b));
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * a + b;
  }
  float s = 0.0f;
  for (float v : acc) s += v;
  *sink = s;
  return 2.0 * kChains * static_cast<double>(iterations);
}

constexpr PeakLoops kScalar{scalar_fma, "mulss + addss", nullptr, ""};

}  // namespace

const PeakLoops& scalar_peak_loops() { return kScalar; }

const PeakLoops& peak_loops(KernelPath p) {
  switch (p) {
#if CLM_ARCH_X86_64
    case KernelPath::Avx512Vnni: return avx512_vnni_peak_loops();
    case KernelPath::Avx512: return avx512_peak_loops();
    case KernelPath::Avx2: return avx2_peak_loops();
#elif CLM_ARCH_AARCH64
    case KernelPath::NeonDot: return neon_dot_peak_loops();
    case KernelPath::Neon: return neon_peak_loops();
#endif
    default: break;  // Scalar, and the paths of the other architecture
  }
  return scalar_peak_loops();
}

}  // namespace clm
