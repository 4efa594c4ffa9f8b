// K-quant block layouts against hand-built blocks, and the reference
// quantizers' round-trip error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kquant_blocks.h"
#include "kernels/quantize.h"
#include "util/half.h"

namespace clm {
namespace {

template <class Block>
std::vector<float> decode(const Block& blk) {
  std::vector<float> y(kSuperBlockElems);
  dequantize_row(sizeof(Block) == 144 ? WeightType::Q4_K : sizeof(Block) == 176 ? WeightType::Q5_K : WeightType::Q6_K,
                 reinterpret_cast<const std::byte*>(&blk), y.data(), y.size());
  return y;
}

// Twelve scale bytes whose 6-bit fields were worked out by hand.
constexpr uint8_t kScaleBytes[12] = {0x43, 0x05, 0x87, 0xC1, 0x0A, 0x4B, 0x8C, 0xFF, 0x21, 0x43, 0x65, 0x87};
constexpr uint8_t kSc[8] = {3, 5, 7, 1, 17, 3, 37, 55};
constexpr uint8_t kMn[8] = {10, 11, 12, 63, 2, 20, 38, 56};

TEST(KQuant, ScalesAndMinsUnpackFromTheirSixBitFields) {
  uint8_t sc[8], mn[8], packed[12];
  unpack_k_scales(kScaleBytes, sc, mn);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(sc[j], kSc[j]) << j;
    EXPECT_EQ(mn[j], kMn[j]) << j;
  }
  pack_k_scales(kSc, kMn, packed);
  EXPECT_EQ(std::memcmp(packed, kScaleBytes, 12), 0);
}

TEST(KQuant, Q4_KElementsTakeNibblesOfTheirSubBlock) {
  BlockQ4_K blk{};
  blk.d = f32_to_f16(0.5f);
  blk.dmin = f32_to_f16(0.25f);
  std::memcpy(blk.scales, kScaleBytes, 12);
  for (int i = 0; i < 128; ++i) blk.qs[i] = static_cast<uint8_t>(i * 7 + 1);
  const auto y = decode(blk);
  // Sub-block j, element l: nibble (j odd: high) of qs[32 * (j / 2) + l].
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) {
      const int q = (blk.qs[32 * (j / 2) + l] >> (j % 2 ? 4 : 0)) & 15;
      EXPECT_EQ(y[32 * j + l], 0.5f * kSc[j] * static_cast<float>(q) - 0.25f * kMn[j]) << j << " " << l;
    }
  EXPECT_EQ(y[0], -1.0f);     // qs[0] = 1: 0.5 * 3 * 1 - 0.25 * 10
  EXPECT_EQ(y[32], -2.75f);   // high nibble of qs[0] = 0: -0.25 * 11
  EXPECT_EQ(y[255], 178.5f);  // qs[127] = 0x7a, high nibble 7: 0.5 * 55 * 7 - 0.25 * 56
}

TEST(KQuant, Q5_KFifthBitIsBitJOfQh) {
  BlockQ5_K blk{};
  blk.d = f32_to_f16(0.5f);
  blk.dmin = f32_to_f16(0.25f);
  std::memcpy(blk.scales, kScaleBytes, 12);
  for (int i = 0; i < 128; ++i) blk.qs[i] = static_cast<uint8_t>(i * 7 + 1);
  for (int l = 0; l < 32; ++l) blk.qh[l] = static_cast<uint8_t>(l * 37);
  const auto y = decode(blk);
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) {
      const int q = ((blk.qs[32 * (j / 2) + l] >> (j % 2 ? 4 : 0)) & 15) + ((blk.qh[l] >> j) & 1) * 16;
      EXPECT_EQ(y[32 * j + l], 0.5f * kSc[j] * static_cast<float>(q) - 0.25f * kMn[j]) << j << " " << l;
    }
  // Element 101 (sub-block 3, l = 5): qs[37] = 4 -> high nibble 0; qh[5] = 185 has bit 3 -> q = 16.
  EXPECT_EQ(y[101], 0.5f * 1 * 16 - 0.25f * 63);
}

TEST(KQuant, Q6_KQuartersOfEachHalfTakeTheirNibbleAndBitPair) {
  BlockQ6_K blk{};
  blk.d = f32_to_f16(0.5f);
  for (int i = 0; i < 128; ++i) blk.ql[i] = static_cast<uint8_t>(i * 13 + 5);
  for (int i = 0; i < 64; ++i) blk.qh[i] = static_cast<uint8_t>(i * 29 + 3);
  for (int j = 0; j < 16; ++j) blk.scales[j] = static_cast<int8_t>(j - 8);
  blk.scales[0] = -128;
  blk.scales[15] = 127;
  const auto y = decode(blk);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, quarter = (e % 128) / 32, l = e % 32;
    const uint8_t lo_byte = blk.ql[64 * h + l + (quarter % 2 ? 32 : 0)];
    const int lo = quarter < 2 ? lo_byte & 15 : lo_byte >> 4;
    const int hi = (blk.qh[32 * h + l] >> (2 * quarter)) & 3;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(blk.scales[e / 16]) * static_cast<float>((lo | hi << 4) - 32)) << e;
  }
  // Element 200: ql[72] = 0xad -> high nibble 10, qh[40] = 139 -> bits 4-5 = 0, scale[12] = 4.
  EXPECT_EQ(y[200], 0.5f * 4 * (10 - 32));
}

TEST(KQuant, Q8_KStoresScaleQuantsAndSixteenElementSums) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 50) - 25.0f;  // amax 25 at i = 0
  std::vector<std::byte> bytes(row_bytes(WeightType::Q8_K, 256));
  quantize_row(WeightType::Q8_K, x.data(), bytes.data(), 256);
  BlockQ8_K blk;
  std::memcpy(&blk, bytes.data(), sizeof blk);
  EXPECT_EQ(blk.d, 25.0f / 127.0f);
  EXPECT_EQ(blk.qs[0], -127);
  EXPECT_EQ(blk.qs[25], 0);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(blk.qs[i], static_cast<int8_t>(std::round(x[i] * (1.0f / blk.d)))) << i;
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += blk.qs[16 * j + i];
    EXPECT_EQ(blk.bsums[j], sum) << j;
  }
  std::vector<float> back(256);
  dequantize_row(WeightType::Q8_K, bytes.data(), back.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(back[i], blk.d * blk.qs[i]);
}

// Ties round away from zero, values just short of a half do not, and a NaN
// clamps to -127: what std::round of the value clamped by std::fmax/fmin gives.
TEST(KQuant, Q8_KRoundsLikeStdRoundOfTheClampedValue) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 127) - 63.0f + (i % 2 ? 0.5f : 0.25f);
  x[0] = 127.0f;  // amax: d = 1, so x * id is x itself
  x[1] = -0.5f;
  x[2] = 0.5f;
  x[3] = std::nextafter(0.5f, 0.0f);
  x[4] = -std::nextafter(0.5f, 0.0f);
  x[5] = 126.5f;
  x[6] = -126.5f;
  x[7] = NAN;
  x[8] = -127.0f;
  x[9] = std::nextafter(2.5f, 3.0f);
  std::vector<std::byte> bytes(row_bytes(WeightType::Q8_K, 256));
  quantize_row(WeightType::Q8_K, x.data(), bytes.data(), 256);
  BlockQ8_K blk;
  std::memcpy(&blk, bytes.data(), sizeof blk);
  ASSERT_EQ(blk.d, 1.0f);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(blk.qs[i], static_cast<int8_t>(std::round(std::fmin(std::fmax(x[i], -127.0f), 127.0f)))) << i;
  EXPECT_EQ(blk.qs[1], -1);
  EXPECT_EQ(blk.qs[3], 0);
  EXPECT_EQ(blk.qs[7], -127);
}

// The levels a k-quant sub-block can represent, read from the stored block.
struct Levels {
  float step, offset;  // value = step * q - offset, q in [lo, hi]
  int lo, hi;
};

Levels levels(WeightType t, const std::byte* block, int elem) {
  uint8_t sc[8], mn[8];
  if (t == WeightType::Q6_K) {
    BlockQ6_K b;
    std::memcpy(&b, block, sizeof b);
    return {f16_to_f32(b.d) * b.scales[elem / 16], 0.0f, -32, 31};
  }
  BlockQ4_K b;  // Q5_K shares the first 16 bytes
  std::memcpy(&b, block, sizeof b);
  unpack_k_scales(b.scales, sc, mn);
  const int j = elem / 32;
  return {f16_to_f32(b.d) * sc[j], f16_to_f32(b.dmin) * mn[j], 0, t == WeightType::Q4_K ? 15 : 31};
}

// How far x lies from the nearest level. (A plain comparison rather than an
// fmin reduction: GCC 12's AArch64 vectorizer stops with an internal error on
// the fmin form.)
float nearest_level_error(const Levels& lv, float x) {
  float best = INFINITY;
  for (int q = lv.lo; q <= lv.hi; ++q) {
    const float e = std::fabs(lv.step * static_cast<float>(q) - lv.offset - x);
    if (e < best) best = e;
  }
  return best;
}

// Every element decodes to the nearest level its stored scales allow, and the
// error stays within stated bounds for uniform data in [-1, 1): at most 0.6 of
// the element's (stored) step beyond the sub-block's covered range, and a row
// RMS error of at most kRms[t] (the ideal uniform quantizer of a sub-block's
// range gives range / levels / sqrt(12): 0.038, 0.019, 0.009 for 16, 32, 64).
TEST(KQuant, RoundTripPicksTheNearestLevelWithinStatedBounds) {
  const struct {
    WeightType t;
    double rms;
  } kCases[] = {{WeightType::Q4_K, 0.045}, {WeightType::Q5_K, 0.023}, {WeightType::Q6_K, 0.012}};
  for (const auto& c : kCases) {
    const std::size_t n = 256 * 8;
    auto x = test::random_floats(n, 21);
    for (std::size_t i = 256; i < 512; ++i) x[i] *= 1e-3f;  // a block with tiny scales
    for (std::size_t i = 512; i < 768; ++i) x[i] = 0.0f;    // an all-zero block
    for (std::size_t i = 768; i < 1024; ++i) x[i] = std::fabs(x[i]) + 0.5f;  // all positive: min clamps to 0
    for (std::size_t i = 1024; i < 1056; ++i) x[i] *= 0.01f;  // one quiet sub-block in a loud block
    std::vector<std::byte> bytes(row_bytes(c.t, n));
    quantize_row(c.t, x.data(), bytes.data(), n);
    std::vector<float> y(n);
    dequantize_row(c.t, bytes.data(), y.data(), n);
    const std::size_t bb = row_bytes(c.t, 256);
    double sq = 0.0, sq_ref = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const Levels lv = levels(c.t, bytes.data() + i / 256 * bb, static_cast<int>(i % 256));
      const float best = nearest_level_error(lv, x[i]);
      const float err = std::fabs(y[i] - x[i]);
      ASSERT_LE(err, best * (1.0f + 1e-5f) + 1e-7f) << weight_type_name(c.t) << " i=" << i;
      const float a = lv.step * static_cast<float>(lv.lo), b = lv.step * static_cast<float>(lv.hi);
      const float covered_lo = std::fmin(a, b) - lv.offset, covered_hi = std::fmax(a, b) - lv.offset;
      const float outside = std::fmax(0.0f, std::fmax(covered_lo - x[i], x[i] - covered_hi));
      ASSERT_LE(err, 0.6f * std::fabs(lv.step) + outside) << weight_type_name(c.t) << " i=" << i;
      if (i < 256 || i >= 1024) {
        sq += static_cast<double>(err) * err;
        sq_ref += 1.0;
      }
      if (i >= 512 && i < 768) {
        EXPECT_EQ(y[i], 0.0f);
      }
    }
    EXPECT_LE(std::sqrt(sq / sq_ref), c.rms) << weight_type_name(c.t);
    // The tiny block keeps its relative precision: scales are per block.
    double tiny = 0.0;
    for (std::size_t i = 256; i < 512; ++i) tiny = std::max(tiny, static_cast<double>(std::fabs(y[i] - x[i])));
    EXPECT_LE(tiny, 1e-3 * 4.0 / (c.t == WeightType::Q4_K ? 15 : c.t == WeightType::Q5_K ? 31 : 63)) << weight_type_name(c.t);
  }
}

}  // namespace
}  // namespace clm
