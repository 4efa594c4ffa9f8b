// The numerics id names exactly the paths that compute the same bits: every
// type's matmul gives bitwise the same outputs on the paths of one family,
// and the families that round differently get different ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/numerics.h"
#include "util/thread_pool.h"

namespace clm {
namespace {

TEST(Numerics, FamiliesThatRoundDifferentlyHaveDifferentIds) {
  EXPECT_NE(kernel_numerics_id(KernelPath::Scalar), kernel_numerics_id(KernelPath::Avx2));
  EXPECT_NE(kernel_numerics_id(KernelPath::Avx2), kernel_numerics_id(KernelPath::Avx512));
  EXPECT_EQ(kernel_numerics_id(KernelPath::Avx512), kernel_numerics_id(KernelPath::Avx512Vnni));
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

// Avx512 and Avx512Vnni share a family: every weight type's products agree
// bit for bit (the integer sums are exact on either route).
TEST(Numerics, PathsOfOneFamilyComputeTheSameBits) {
  if (!kernel_path_supported(KernelPath::Avx512Vnni)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
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
    for (KernelPath p : {KernelPath::Avx512, KernelPath::Avx512Vnni}) {
      test::ScopedKernelPath scoped(p);
      y[i].assign(static_cast<std::size_t>(n) * m.rows, 0.0f);
      matmul(m.view(), x.data(), n, y[i].data(), pool);
      ++i;
    }
    EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)), 0) << weight_type_name(t);
  }
}

}  // namespace
}  // namespace clm
