// The k-quant dot kernels on raw blocks: every code, scale and activation
// extreme, compared bitwise across paths and between dot and dot4, and the
// scalar reference against a double dot of the decoded values. Random bytes
// reach what the quantizers never write (scale -128 in Q6_K, all codes and
// scales at their maximum next to activations of +-127), which is where a
// saturating 16-bit step or a wrong lane would show.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kquant_blocks.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

namespace clm {
namespace {

constexpr std::size_t kBlocks = 7;
constexpr std::size_t kCols = kBlocks * kSuperBlockElems;

// Super-block b of the row: random bytes, then block 1 with every bit set
// (codes and Q4_K/Q5_K scales at their maximum, Q6_K scales -1), block 2 with
// Q6_K scales -128 and all code bits set, block 3 all zero; d (and dmin) are
// finite and of either sign.
std::vector<std::byte> weight_row(WeightType t, unsigned seed) {
  const std::size_t bb = row_bytes(t, kSuperBlockElems);
  std::vector<std::byte> row(bb * kBlocks);
  std::mt19937 rng(seed);
  for (auto& v : row) v = static_cast<std::byte>(rng() & 0xFF);
  std::memset(row.data() + bb, 0xFF, bb);
  std::memset(row.data() + 2 * bb, 0xFF, bb);
  std::memset(row.data() + 3 * bb, 0, bb);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (std::size_t b = 0; b < kBlocks; ++b) {
    std::byte* blk = row.data() + b * bb;
    if (t == WeightType::Q6_K) {
      if (b == 2) std::memset(blk + offsetof(BlockQ6_K, scales), 0x80, 16);
      const uint16_t d = f32_to_f16(scale(rng));
      std::memcpy(blk + offsetof(BlockQ6_K, d), &d, 2);
    } else {
      const uint16_t d = f32_to_f16(scale(rng)), dmin = f32_to_f16(scale(rng));
      std::memcpy(blk + offsetof(BlockQ4_K, d), &d, 2);
      std::memcpy(blk + offsetof(BlockQ4_K, dmin), &dmin, 2);
    }
  }
  return row;
}

// Four Q8_K activation rows, `stride` bytes apart: random quants in
// [-127, 127] with whole blocks at +127, -127 and alternating signs.
std::vector<std::byte> activation_rows(std::size_t stride, unsigned seed) {
  std::vector<std::byte> rows(4 * stride);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> d(1e-3f, 1e-1f);
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t b = 0; b < kBlocks; ++b) {
      BlockQ8_K blk{};
      blk.d = d(rng);
      for (std::size_t i = 0; i < kSuperBlockElems; ++i) {
        const int mode = static_cast<int>((b + r) % kBlocks);
        const int v = mode == 1 ? 127 : mode == 2 ? -127 : mode == 3 ? (i % 2 ? 127 : -127) : q(rng);
        blk.qs[i] = static_cast<int8_t>(v);
      }
      for (std::size_t j = 0; j < 16; ++j) {
        int s = 0;
        for (std::size_t i = 0; i < 16; ++i) s += blk.qs[16 * j + i];
        blk.bsums[j] = static_cast<int16_t>(s);
      }
      std::memcpy(rows.data() + r * stride + b * sizeof blk, &blk, sizeof blk);
    }
  return rows;
}

struct Dots {
  float (*dot)(const std::byte*, const std::byte*, std::size_t);
  void (*dot4)(const std::byte*, const std::byte*, std::size_t, std::size_t, float*);
};
Dots dots(const VecKernels& k, WeightType t) {
  if (t == WeightType::Q4_K) return {k.dot_q4_k, k.dot4_q4_k};
  if (t == WeightType::Q5_K) return {k.dot_q5_k, k.dot4_q5_k};
  return {k.dot_q6_k, k.dot4_q6_k};
}

TEST(KQuantDot, EveryPathAndDot4AreBitwiseTheScalarReference) {
  const std::size_t stride = row_bytes(WeightType::Q8_K, kCols) + 52;  // rows not packed
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    for (unsigned seed = 1; seed <= 8; ++seed) {
      const auto w = weight_row(t, seed);
      const auto x = activation_rows(stride, seed + 100);
      const Dots ref = dots(vec_kernels(KernelPath::Scalar), t);
      float expect[4];
      for (std::size_t r = 0; r < 4; ++r) expect[r] = ref.dot(w.data(), x.data() + r * stride, kCols);
      for (KernelPath p : test::supported_paths()) {
        const Dots d = dots(vec_kernels(p), t);
        float four[4];
        d.dot4(w.data(), x.data(), stride, kCols, four);
        for (std::size_t r = 0; r < 4; ++r) {
          const float one = d.dot(w.data(), x.data() + r * stride, kCols);
          EXPECT_EQ(std::memcmp(&one, &expect[r], sizeof one), 0)
              << weight_type_name(t) << " " << kernel_path_name(p) << " seed " << seed << " row " << r << ": "
              << one << " vs " << expect[r];
          EXPECT_EQ(std::memcmp(&four[r], &expect[r], sizeof one), 0)
              << weight_type_name(t) << " " << kernel_path_name(p) << " dot4, seed " << seed << " row " << r;
        }
      }
    }
  }
}

// The reference's integers are exact, so it errs only by its float steps:
// a few roundings per super-block and lane, bounded by the sum of
// (|w| + 2 |offset|) |x| as in the matmul tests. Here the decoded values
// come from the dequantizer and the double sum from them.
TEST(KQuantDot, ScalarReferenceMatchesADoubleDotOfTheDecodedValues) {
  const std::size_t stride = row_bytes(WeightType::Q8_K, kCols);
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
      const auto w = weight_row(t, seed);
      const auto x = activation_rows(stride, seed + 200);
      std::vector<float> wf(kCols), xf(kCols), off(kCols, 0.0f);
      dequantize_row(t, w.data(), wf.data(), kCols);
      if (t != WeightType::Q6_K) {  // the value of code 0 in each sub-block
        auto zero = w;
        const std::size_t bb = row_bytes(t, kSuperBlockElems);
        for (std::size_t b = 0; b < kBlocks; ++b) std::memset(zero.data() + b * bb + 16, 0, bb - 16);
        dequantize_row(t, zero.data(), off.data(), kCols);
      }
      const Dots ref = dots(vec_kernels(KernelPath::Scalar), t);
      for (std::size_t r = 0; r < 4; ++r) {
        dequantize_row(WeightType::Q8_K, x.data() + r * stride, xf.data(), kCols);
        double exact = 0.0, mag = 0.0;
        for (std::size_t i = 0; i < kCols; ++i) {
          exact += static_cast<double>(wf[i]) * xf[i];
          mag += (std::fabs(static_cast<double>(wf[i])) + 2.0 * std::fabs(off[i])) * std::fabs(xf[i]);
        }
        const double got = ref.dot(w.data(), x.data() + r * stride, kCols);
        EXPECT_NEAR(got, exact, (4.0 * kBlocks + 16) * 0x1p-23 * mag)
            << weight_type_name(t) << " seed " << seed << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace clm
