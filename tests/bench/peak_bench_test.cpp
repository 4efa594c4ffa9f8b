#include "peak_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "kernels/cpu_features.h"
#include "kernels/peak_probe.h"

namespace clm {
namespace {

// Sane means: positive, and below what any core could do. 32 f32 fmas (two
// 16-lane pipes) are 64 FLOP per cycle, 128 byte products (two 64-byte
// vpdpbusd pipes) 256 OP; at 6 GHz that is 384 GFLOP/s and 1536 GOP/s a
// core, and the byte bound is doubled for cores with more such pipes.
TEST(PeakBench, ReportsPositiveFiguresBelowWhatACoreCanDo) {
  for (int threads : {1, 2}) {
    PeakBenchOptions o;
    o.n_threads = threads;
    o.millis = 20;
    o.repetitions = 1;
    auto r = run_peak_bench(o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->n_threads, threads);
    EXPECT_EQ(r->kernel_path, kernel_path_name(active_kernel_path()));
    EXPECT_GT(r->fma_gflops, 0.1);
    EXPECT_LT(r->fma_gflops, 384.0 * threads);
    // A thread's CPU time never exceeds the wall time it ran in.
    EXPECT_GT(r->fma_gflops_wall, 0.0);
    EXPECT_LE(r->fma_gflops_wall, r->fma_gflops * 1.01);
    if (active_kernel_path() == KernelPath::Scalar) {
      EXPECT_TRUE(r->dot_kind.empty());
    } else {
      EXPECT_FALSE(r->dot_kind.empty());
      EXPECT_GT(r->dot_gops, 0.1);
      EXPECT_LT(r->dot_gops, 3072.0 * threads);
      EXPECT_GT(r->dot_gops_wall, 0.0);
      EXPECT_LE(r->dot_gops_wall, r->dot_gops * 1.01);
    }
    const auto j = to_json(o, *r);
    EXPECT_EQ(j["threads"], threads);
    EXPECT_DOUBLE_EQ(j["fma_f32_gflops"].get<double>(), r->fma_gflops);
    EXPECT_DOUBLE_EQ(j["fma_f32_gflops_wall"].get<double>(), r->fma_gflops_wall);
    EXPECT_EQ(j.contains("dot_i8_gops"), !r->dot_kind.empty());
    EXPECT_EQ(j.contains("dot_i8_gops_wall"), !r->dot_kind.empty());
  }
}

// Every path the CPU supports has a probe of its own instructions, and the
// vector paths' fma probes beat the scalar one (wider registers, fused ops).
TEST(PeakBench, EachSupportedPathProbesItsOwnInstructions) {
  float sink = 0;
  // Best of three, so that one preemption on a loaded machine cannot decide.
  const auto rate = [&](PeakLoop loop) {
    double best = 0;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double ops = loop(1 << 18, &sink);
      best = std::max(best, ops / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double scalar = rate(peak_loops(KernelPath::Scalar).fma_f32);
  EXPECT_EQ(peak_loops(KernelPath::Scalar).dot_i8, nullptr);
  for (KernelPath p : kAllKernelPaths) {
    if (p == KernelPath::Scalar || !kernel_path_supported(p)) continue;
    const PeakLoops& loops = peak_loops(p);
    ASSERT_NE(loops.dot_i8, nullptr) << kernel_path_name(p);
    EXPECT_GT(rate(loops.fma_f32), scalar) << kernel_path_name(p);
    EXPECT_GT(rate(loops.dot_i8), 0.0) << kernel_path_name(p);
  }
#if CLM_ARCH_X86_64
  EXPECT_NE(peak_loops(KernelPath::Avx512).dot_kind, peak_loops(KernelPath::Avx512Vnni).dot_kind);
#endif
#if CLM_ARCH_AARCH64
  EXPECT_NE(peak_loops(KernelPath::Neon).dot_kind, peak_loops(KernelPath::NeonDot).dot_kind);
#endif
}

}  // namespace
}  // namespace clm
