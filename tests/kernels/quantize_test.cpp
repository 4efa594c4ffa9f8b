#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

namespace clm {
namespace {

std::vector<float> round_trip(WeightType t, const std::vector<float>& x, std::vector<std::byte>* bytes = nullptr) {
  std::vector<std::byte> buf(row_bytes(t, x.size()));
  quantize_row(t, x.data(), buf.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row(t, buf.data(), y.data(), x.size());
  if (bytes) *bytes = buf;
  return y;
}

TEST(Quantize, RowBytesFollowTheBlockGeometry) {
  EXPECT_EQ(row_bytes(WeightType::F32, 67), 268u);
  EXPECT_EQ(row_bytes(WeightType::F16, 67), 134u);
  EXPECT_EQ(row_bytes(WeightType::BF16, 67), 134u);
  EXPECT_EQ(row_bytes(WeightType::Q8_0, 96), 3u * 34u);
  EXPECT_EQ(row_bytes(WeightType::Q4_0, 96), 3u * 18u);
  EXPECT_TRUE(is_compute_type(WeightType::Q4_0));
  EXPECT_EQ(row_bytes(WeightType::Q4_K, 512), 2u * 144u);
  EXPECT_EQ(row_bytes(WeightType::Q5_K, 512), 2u * 176u);
  EXPECT_EQ(row_bytes(WeightType::Q6_K, 512), 2u * 210u);
  EXPECT_EQ(row_bytes(WeightType::Q8_K, 512), 2u * 292u);
  EXPECT_TRUE(is_compute_type(WeightType::Q6_K));
  EXPECT_FALSE(is_compute_type(WeightType::Q2_K));
  EXPECT_FALSE(is_compute_type(WeightType::Q8_K));
}

TEST(Quantize, F32IsExact) {
  const auto x = test::random_floats(67, 1, -1e4f, 1e4f);
  EXPECT_EQ(round_trip(WeightType::F32, x), x);
}

TEST(Quantize, F16IsExactForRepresentableValuesAndRoundsOthers) {
  std::vector<float> exact;
  for (uint32_t h = 0; h < 0x7c00u; h += 37) exact.push_back(f16_to_f32(static_cast<uint16_t>(h)));
  for (uint32_t h = 0x8000u; h < 0xfc00u; h += 41) exact.push_back(f16_to_f32(static_cast<uint16_t>(h)));
  EXPECT_EQ(round_trip(WeightType::F16, exact), exact);

  const auto x = test::random_floats(101, 2, -100.0f, 100.0f);
  const auto y = round_trip(WeightType::F16, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], f16_to_f32(f32_to_f16(x[i])));
    EXPECT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-11f);
  }
}

TEST(Quantize, Bf16RoundsToEightMantissaBits) {
  const auto x = test::random_floats(101, 3, -100.0f, 100.0f);
  const auto y = round_trip(WeightType::BF16, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], bf16_to_f32(f32_to_bf16(x[i])));
    EXPECT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
  }
}

TEST(Quantize, Q8_0ErrorIsAtMostHalfAStep) {
  const std::size_t n = 32 * 16;
  auto x = test::random_floats(n, 4, -3.0f, 3.0f);
  for (std::size_t j = 0; j < 32; ++j) x[32 + j] *= 1e-3f;  // a block with a tiny scale
  for (std::size_t j = 0; j < 32; ++j) x[64 + j] = 0.0f;    // an all-zero block
  std::vector<std::byte> bytes;
  const auto y = round_trip(WeightType::Q8_0, x, &bytes);
  for (std::size_t b = 0; b < n / 32; ++b) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
    const float d32 = amax / 127.0f;
    const float d16 = f16_to_f32(block_scale_bits(bytes.data() + b * 34));
    EXPECT_EQ(d16, f16_to_f32(f32_to_f16(d32)));
    // Half a step, plus what storing d as f16 moves the largest code (127).
    const float bound = 0.5f * d32 * (1.0f + 1e-6f) + 127.0f * std::fabs(d32 - d16);
    for (std::size_t j = 0; j < 32; ++j)
      EXPECT_LE(std::fabs(y[b * 32 + j] - x[b * 32 + j]), bound) << "block " << b << " elem " << j;
  }
  for (std::size_t j = 0; j < 32; ++j) EXPECT_EQ(y[64 + j], 0.0f);
}

TEST(Quantize, Q8_0LargestElementMapsTo127) {
  std::vector<float> x(32);
  for (std::size_t j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 20.0f;  // amax = 20 at j = 0
  std::vector<std::byte> bytes;
  round_trip(WeightType::Q8_0, x, &bytes);
  const int8_t* q = block_q8_values(bytes.data());
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[20], 0);
  EXPECT_EQ(q[31], static_cast<int8_t>(std::round(11.0f * 127.0f / 20.0f)));
}

TEST(Quantize, Q4_0NibbleLayoutIsLowHalfThenHighHalf) {
  // d = -8 / -8 = 1: element j < 16 codes to j, element 16 + j codes to j too
  // (x = j - 8 + 0.25 truncates down after + 8.5).
  std::vector<float> x(32);
  for (std::size_t j = 0; j < 16; ++j) {
    x[j] = static_cast<float>(j) - 8.0f;
    x[16 + j] = static_cast<float>(j) - 8.0f + 0.25f;
  }
  std::vector<std::byte> bytes;
  const auto y = round_trip(WeightType::Q4_0, x, &bytes);
  EXPECT_EQ(f16_to_f32(block_scale_bits(bytes.data())), 1.0f);
  const uint8_t* q = block_q4_nibbles(bytes.data());
  for (std::size_t j = 0; j < 16; ++j) {
    EXPECT_EQ(q[j], static_cast<uint8_t>(j | (j << 4))) << j;
    EXPECT_EQ(y[j], static_cast<float>(j) - 8.0f);
    EXPECT_EQ(y[16 + j], static_cast<float>(j) - 8.0f);
  }
}

TEST(Quantize, Q4_0ErrorIsWithinOneStep) {
  const std::size_t n = 32 * 16;
  const auto x = test::random_floats(n, 5, -2.0f, 2.0f);
  std::vector<std::byte> bytes;
  const auto y = round_trip(WeightType::Q4_0, x, &bytes);
  for (std::size_t b = 0; b < n / 32; ++b) {
    float amax = 0.0f, max = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) {
      if (std::fabs(x[b * 32 + j]) > amax) {
        amax = std::fabs(x[b * 32 + j]);
        max = x[b * 32 + j];
      }
    }
    const float d32 = max / -8.0f;
    const float d16 = f16_to_f32(block_scale_bits(bytes.data() + b * 18));
    const float slack = 8.0f * std::fabs(d32 - d16) + 1e-6f * amax;
    for (std::size_t j = 0; j < 32; ++j) {
      const float xi = x[b * 32 + j];
      const float err = std::fabs(y[b * 32 + j] - xi);
      // Rounded to the nearest level, except the top level (+7) clamps.
      const bool clamped = xi / d32 >= 7.5f;
      EXPECT_LE(err, (clamped ? 1.0f : 0.5f) * std::fabs(d32) + slack) << "block " << b << " elem " << j;
    }
  }
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

// The activation quantizer of every kernel path writes bitwise what the
// reference quantize_row writes: ordinary rows at several scales, rows of
// exact halves (x * (1 / d) lands on k + 0.5, where rounding away from zero
// and to even differ), all-zero and signed-zero blocks, and large values.
TEST(QuantizeQ8Activations, EveryPathIsBitwiseTheReference) {
  constexpr std::size_t n = 32 * 24;
  std::vector<std::vector<float>> rows;
  for (float scale : {1e-4f, 1.0f, 37.0f, 3e4f}) rows.push_back(test::random_floats(n, 7u, -scale, scale));
  std::vector<float> halves(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Each block holds 127 (so d = 1, 1 / d = 1) and halves of both signs.
    const float k = static_cast<float>(static_cast<int>(i % 32) * 4 - 64) + 0.5f;
    halves[i] = i % 32 == 0 ? 127.0f : k;
  }
  rows.push_back(halves);
  std::vector<float> zeros(n, 0.0f);
  for (std::size_t i = 0; i < n; i += 3) zeros[i] = -0.0f;
  for (std::size_t i = 64; i < 96; ++i) zeros[i] = i % 2 ? 1e-3f : -2.5f;  // one block that is not zero
  rows.push_back(zeros);
  for (const auto& x : rows) {
    std::vector<std::byte> want(row_bytes(WeightType::Q8_0, n));
    quantize_row(WeightType::Q8_0, x.data(), want.data(), n);
    for (KernelPath path : test::supported_paths()) {
      std::vector<std::byte> got(want.size(), std::byte{0x77});
      vec_kernels(path).quantize_q8_0_row(x.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << kernel_path_name(path);
    }
  }
}

}  // namespace
}  // namespace clm
