// The numerics id names exactly the paths that compute the same bits: every
// type's matmul gives bitwise the same outputs on the paths of one family,
// and the families that round differently get different ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/numerics.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "util/half.h"
#include "util/thread_pool.h"

namespace clm {
namespace {

TEST(Numerics, FamiliesThatRoundDifferentlyHaveDifferentIds) {
  EXPECT_NE(kernel_numerics_id(KernelPath::Scalar), kernel_numerics_id(KernelPath::Avx2));
  EXPECT_NE(kernel_numerics_id(KernelPath::Avx2), kernel_numerics_id(KernelPath::Avx512));
  EXPECT_EQ(kernel_numerics_id(KernelPath::Avx512), kernel_numerics_id(KernelPath::Avx512Vnni));
  EXPECT_NE(kernel_numerics_id(KernelPath::Scalar), kernel_numerics_id(KernelPath::Neon));
  EXPECT_NE(kernel_numerics_id(KernelPath::Avx512), kernel_numerics_id(KernelPath::Neon));
  EXPECT_EQ(kernel_numerics_id(KernelPath::Neon), kernel_numerics_id(KernelPath::NeonDot));
  const uint64_t model = 0x1234;
  const KvTypes f16 = KvType::F16;
  EXPECT_NE(cache_fingerprint(model, kernel_numerics_id(KernelPath::Avx2), f16),
            cache_fingerprint(model, kernel_numerics_id(KernelPath::Avx512), f16));
  EXPECT_NE(cache_fingerprint(model, kernel_numerics_id(KernelPath::Avx512), f16),
            cache_fingerprint(model + 1, kernel_numerics_id(KernelPath::Avx512), f16));
}

// Other K/V types write other bytes for the same tokens: every pair of
// types, K and V apart, gives its own fingerprint.
TEST(Numerics, EveryKvTypePairHasItsOwnFingerprint) {
  const uint64_t model = 0x1234, numerics = kernel_numerics_id(KernelPath::Scalar);
  std::vector<uint64_t> seen;
  for (int k = 0; k < kKvTypeCount; ++k)
    for (int v = 0; v < kKvTypeCount; ++v)
      seen.push_back(cache_fingerprint(model, numerics, {static_cast<KvType>(k), static_cast<KvType>(v)}));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
}

// Every weight type's matmul, bitwise the same on paths a and b.
void expect_same_matmul_bits(KernelPath a, KernelPath b) {
  ThreadPool pool(2);
  for (WeightType t : {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0,
                       WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    const bool k_quant = t == WeightType::Q4_K || t == WeightType::Q5_K || t == WeightType::Q6_K;
    const int cols = k_quant ? 512 : 320;
    const test::TestMatrix m(t, 37, cols, 5);
    const int n = 5;
    const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, 6);
    std::vector<float> y[2];
    int i = 0;
    for (KernelPath p : {a, b}) {
      test::ScopedKernelPath scoped(p);
      ASSERT_EQ(active_kernel_path(), p);
      y[i].assign(static_cast<std::size_t>(n) * m.rows, 0.0f);
      matmul(m.view(), x.data(), n, y[i].data(), pool);
      ++i;
    }
    EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)), 0)
        << weight_type_name(t) << " " << kernel_path_name(a) << " vs " << kernel_path_name(b);
  }
}

// The paths of one family exist on one architecture each, so each test is
// built where its paths are (a CPU of that architecture may still lack the
// wider of the two, and then skips).
#if CLM_ARCH_X86_64
// Avx512 and Avx512Vnni share a family: every weight type's products agree
// bit for bit (the integer sums are exact on either route).
TEST(Numerics, PathsOfOneFamilyComputeTheSameBits) {
  if (!kernel_path_supported(KernelPath::Avx512Vnni)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  expect_same_matmul_bits(KernelPath::Avx512, KernelPath::Avx512Vnni);
}
#endif

#if CLM_ARCH_AARCH64

// Neon and NeonDot share a family: smull + sadalp and sdot reach the same
// exact integers. Every AArch64 CPU that has the dot-product extension runs
// this (qemu-aarch64's default CPU, a Cortex-A76); one without it (a
// Cortex-A53) cannot run NeonDot at all.
TEST(Numerics, NeonAndNeonDotComputeTheSameBits) {
  EXPECT_EQ(kernel_numerics_id(KernelPath::Neon), kernel_numerics_id(KernelPath::NeonDot));
  if (!kernel_path_supported(KernelPath::NeonDot)) GTEST_SKIP() << "this CPU has no dot-product extension (asimddp)";
  expect_same_matmul_bits(KernelPath::Neon, KernelPath::NeonDot);
}

// The same at the level of the kernels, on the bytes that stress the integer
// routes: Q8_0 weights of -128 and +127 against activations of +-127, random
// Q4_0 / Q8_0 rows, every dot and dot4 at an odd and an even block count.
TEST(Numerics, NeonAndNeonDotQuantDotsAgreeOnExtremeBytes) {
  if (!kernel_path_supported(KernelPath::NeonDot)) GTEST_SKIP() << "this CPU has no dot-product extension (asimddp)";
  const VecKernels& a = vec_kernels(KernelPath::Neon);
  const VecKernels& b = vec_kernels(KernelPath::NeonDot);
  for (std::size_t blocks : {std::size_t{1}, std::size_t{5}, std::size_t{8}}) {
    const std::size_t n = blocks * kQuantBlockElems;
    const std::size_t q8 = row_bytes(WeightType::Q8_0, n), q4 = row_bytes(WeightType::Q4_0, n);
    std::mt19937 rng(static_cast<unsigned>(blocks));
    std::vector<std::byte> w8(q8), w4(q4), x(4 * q8);
    for (auto& v : w8) v = static_cast<std::byte>(rng() % 3 == 0 ? 0x80 : rng() & 0xFF);
    for (auto& v : w4) v = static_cast<std::byte>(rng() & 0xFF);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::byte>(i % 2 ? 0x81 : rng() % 255 + 0x81);
    // Finite scales of either sign.
    const auto scales = [&](std::vector<std::byte>& row, std::size_t block_bytes) {
      for (std::size_t blk = 0; blk < row.size() / block_bytes; ++blk) {
        const uint16_t d = f32_to_f16(static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 1e-4f);
        std::memcpy(row.data() + blk * block_bytes, &d, 2);
      }
    };
    scales(w8, sizeof(BlockQ8_0));
    scales(w4, sizeof(BlockQ4_0));
    scales(x, sizeof(BlockQ8_0));
    for (const auto& [name, w, dot_a, dot_b, dot4_a, dot4_b] :
         {std::tuple{"q8_0", &w8, a.dot_q8_0, b.dot_q8_0, a.dot4_q8_0, b.dot4_q8_0},
          std::tuple{"q4_0", &w4, a.dot_q4_0, b.dot_q4_0, a.dot4_q4_0, b.dot4_q4_0}}) {
      float four_a[4], four_b[4];
      dot4_a(w->data(), x.data(), q8, n, four_a);
      dot4_b(w->data(), x.data(), q8, n, four_b);
      EXPECT_EQ(std::memcmp(four_a, four_b, sizeof four_a), 0) << name << " dot4, blocks " << blocks;
      for (std::size_t r = 0; r < 4; ++r) {
        const float one_a = dot_a(w->data(), x.data() + r * q8, n), one_b = dot_b(w->data(), x.data() + r * q8, n);
        EXPECT_EQ(std::memcmp(&one_a, &one_b, sizeof one_a), 0) << name << " blocks " << blocks << " row " << r;
      }
    }
  }
}
#endif  // CLM_ARCH_AARCH64

}  // namespace
}  // namespace clm
