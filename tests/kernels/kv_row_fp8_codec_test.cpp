// The fp8 KV row: its layout and size, the E4M3 values it reads (checked
// against the format's definition, not the table the code uses), its
// rounding (nearest, ties to even, saturating), its scale, its accuracy and
// the capacity it buys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kv_geometry.h"
#include "kernels/kv_row_codec.h"

namespace clm {
namespace {

// OCP FP8 E4M3 ("fn"): sign, 4 exponent bits biased by 7, 3 mantissa bits;
// exponent 0 is subnormal (m / 8 * 2^-6). 0x7F/0xFF would be NaN.
double e4m3_by_definition(unsigned b) {
  const unsigned e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, static_cast<int>(e) - 7);
  return b & 0x80 ? -mag : mag;
}

int stored_exponent(const std::vector<std::byte>& row) {
  int8_t e;
  std::memcpy(&e, row.data(), 1);
  return e;
}

std::vector<std::byte> fp8_row(const std::vector<float>& x) {
  std::vector<std::byte> row(kv_row_bytes(KvType::Fp8, static_cast<int>(x.size())));
  quantize_fp8_row(x.data(), static_cast<int>(x.size()), row.data());
  return row;
}

TEST(KvRowFp8Codec, RowSizesAndWhichHeadsItTakes) {
  EXPECT_EQ(kv_row_bytes(KvType::Fp8, 64), 65u);  // one exponent byte, one byte a value
  EXPECT_EQ(kv_row_bytes(KvType::Fp8, 128), 129u);
  EXPECT_EQ(kv_row_bytes(KvType::Fp8, 8), 9u);
  for (int hd : {1, 7, 8, 33, 64, 80, 128, 256}) EXPECT_EQ(kv_type_unsupported(KvType::Fp8, hd), "") << hd;
  EXPECT_EQ(parse_kv_type("fp8"), KvType::Fp8);
  EXPECT_TRUE(is_quantized(KvType::Fp8));
  EXPECT_EQ(kv_types_text({KvType::Fp8, KvType::F16}), "k=fp8,v=f16");
}

// Every byte but the two NaN patterns reads as the format says, and the
// encoder gives that byte back for its value (so each is reachable and the
// grid has no holes); -0 is 0x80.
TEST(KvRowFp8Codec, EveryByteReadsAsE4M3AndRoundTrips) {
  for (unsigned b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;
    const float v = kFp8Values[b];
    EXPECT_EQ(static_cast<double>(v), e4m3_by_definition(b)) << b;
    EXPECT_EQ(fp8_e4m3_from_f32(v), b) << b << " reads " << v;
  }
  EXPECT_EQ(kFp8Values[0x7E], 448.0f);
  EXPECT_EQ(kFp8Values[0x01], 0x1p-9f);
  EXPECT_EQ(kFp8Values[0x08], 0x1p-6f);
  // The NaN patterns are never written; every path reads them as the
  // number the pattern would be (15 * 2^5).
  EXPECT_EQ(kFp8Values[0x7F], 480.0f);
  EXPECT_EQ(kFp8Values[0xFF], -480.0f);
}

TEST(KvRowFp8Codec, RoundingIsNearestTiesToEvenAndSaturates) {
  // 1.0625 lies halfway between 1 (0x38, even) and 1.125 (0x39): 1.
  EXPECT_EQ(fp8_e4m3_from_f32(1.0625f), 0x38u);
  // 1.1875, halfway between 1.125 (0x39) and 1.25 (0x3A, even): 1.25.
  EXPECT_EQ(fp8_e4m3_from_f32(1.1875f), 0x3Au);
  EXPECT_EQ(fp8_e4m3_from_f32(1.19f), 0x3Au);
  EXPECT_EQ(fp8_e4m3_from_f32(-1.06f), 0xB8u);
  // 1.9375 rounds up into the next binade: 2 is 0x40.
  EXPECT_EQ(fp8_e4m3_from_f32(1.96f), 0x40u);
  // Subnormals: steps of 2^-9; half a step rounds to even (0), 1.5 steps to 2.
  EXPECT_EQ(fp8_e4m3_from_f32(0x1p-10f), 0x00u);
  EXPECT_EQ(fp8_e4m3_from_f32(0x3p-10f), 0x02u);
  EXPECT_EQ(fp8_e4m3_from_f32(0x1.fp-7f), 0x08u);  // 7.75 steps: the smallest normal
  EXPECT_EQ(fp8_e4m3_from_f32(1e-30f), 0x00u);
  // Past the largest value: 448, whatever the distance; NaN: 0.
  EXPECT_EQ(fp8_e4m3_from_f32(460.0f), 0x7Eu);
  EXPECT_EQ(fp8_e4m3_from_f32(1e30f), 0x7Eu);
  EXPECT_EQ(fp8_e4m3_from_f32(-std::numeric_limits<float>::infinity()), 0xFEu);
  EXPECT_EQ(fp8_e4m3_from_f32(std::numeric_limits<float>::quiet_NaN()), 0x00u);
}

// The scale is the smallest power of two that brings the row's largest
// magnitude to 448 or below.
TEST(KvRowFp8Codec, TheScaleIsTheSmallestThatFits) {
  EXPECT_EQ(stored_exponent(fp8_row({448.0f, 1.0f})), 0);
  EXPECT_EQ(stored_exponent(fp8_row({-449.0f, 1.0f})), 1);
  EXPECT_EQ(stored_exponent(fp8_row({0.5f, 1.75f})), -8);  // 1.75 * 2^8 = 448
  EXPECT_EQ(stored_exponent(fp8_row({1.76f, 0.0f})), -7);
  EXPECT_EQ(stored_exponent(fp8_row({0.0f, -1.0f})), -8);  // 2^8 = 256 fits, 2^9 does not
  // The row's largest magnitude reads back within half a unit in the last
  // place: its byte is in E4M3's top binade.
  const std::vector<float> x = {3.3f, -0.2f, 0.01f};
  std::vector<float> back(3);
  decode_kv_row(KvType::Fp8, fp8_row(x).data(), 3, back.data());
  EXPECT_NEAR(back[0], 3.3f, 3.3f / 16.0f);
  EXPECT_EQ(stored_exponent(fp8_row(x)), -7);  // 3.3 * 2^7 = 422 fits; 3.3 * 2^8 would pass 448
}

TEST(KvRowFp8Codec, EdgeValuesStoreSafely) {
  std::vector<float> x(16, 0.0f), back(16);
  auto row = fp8_row(x);
  EXPECT_EQ(stored_exponent(row), 0);
  decode_kv_row(KvType::Fp8, row.data(), 16, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[5] = 0.75f;
  x[6] = -0.375f;
  row = fp8_row(x);  // NaN stores 0 and is never the largest
  decode_kv_row(KvType::Fp8, row.data(), 16, back.data());
  EXPECT_EQ(back[3], 0.0f);
  EXPECT_EQ(back[5], 0.75f);
  EXPECT_EQ(back[6], -0.375f);
  x[7] = std::numeric_limits<float>::infinity();  // the row reads as zeros, not NaN
  row = fp8_row(x);
  decode_kv_row(KvType::Fp8, row.data(), 16, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  // The largest finite floats: the exponent stops at its bound and the
  // values saturate, finite.
  const std::vector<float> huge = {std::numeric_limits<float>::max(), -1e38f, 1.0f};
  row = fp8_row(huge);
  EXPECT_EQ(stored_exponent(row), kFp8MaxExp);
  back.resize(3);
  decode_kv_row(KvType::Fp8, row.data(), 3, back.data());
  EXPECT_EQ(back[0], std::ldexp(448.0f, kFp8MaxExp));
  EXPECT_NEAR(back[1], -1e38f, 1e38f / 16.0f);
  // Tiny rows stop at the lower bound and read as what that scale holds.
  const std::vector<float> tiny = {1e-36f, -2e-36f};
  row = fp8_row(tiny);
  EXPECT_EQ(stored_exponent(row), kFp8MinExp);
  decode_kv_row(KvType::Fp8, row.data(), 2, back.data());
  EXPECT_NEAR(back[1], -2e-36f, std::ldexp(1.0, kFp8MinExp - 10));  // half a subnormal step of 2^-110
  // A damaged exponent byte reads as the nearest one the encoder writes.
  row[0] = static_cast<std::byte>(127);
  EXPECT_EQ(fp8_row_scale(row.data()), std::ldexp(1.0f, kFp8MaxExp));
  row[0] = static_cast<std::byte>(0x80);  // -128
  EXPECT_EQ(fp8_row_scale(row.data()), std::ldexp(1.0f, kFp8MinExp));
}

// Each value within half a unit in the last place of itself (2^-4 of it in
// the normal range), or within half a subnormal step (2^-10 of the scale)
// below it.
TEST(KvRowFp8Codec, ErrorIsWithinHalfAnUlp) {
  for (int hd : {8, 24, 64, 128}) {
    auto x = test::random_floats(static_cast<std::size_t>(hd), 17u + static_cast<unsigned>(hd), -3.0f, 3.0f);
    x[1] = 1e-4f;  // far below the largest: subnormal after scaling
    std::vector<std::byte> row(kv_row_bytes(KvType::Fp8, hd));
    std::vector<float> back(static_cast<std::size_t>(hd));
    encode_kv_row(KvType::Fp8, x.data(), hd, row.data());
    decode_kv_row(KvType::Fp8, row.data(), hd, back.data());
    const double scale = fp8_row_scale(row.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double err = std::fabs(static_cast<double>(back[i]) - x[i]);
      EXPECT_LE(err, std::fmax(std::fabs(x[i]) / 16.0, scale * 0x1p-10)) << "hd " << hd << " i " << i;
    }
  }
}

// With the same memory an fp8 block holds at least 1.85x the tokens of an
// f16 one once heads are 32 wide or more (64: 128 bytes against 65, 1.97x);
// with head_dim 8 the exponent byte is a ninth of the row and the gain 1.78x.
TEST(KvRowFp8Codec, BlocksAreSmallerByTheDocumentedRatio) {
  for (int hd : {32, 64, 128}) {
    const KvGeometry f16{4, 2, hd, 32, KvType::F16};
    const KvGeometry fp8{4, 2, hd, 32, KvType::Fp8};
    EXPECT_GE(static_cast<double>(f16.block_bytes()) / static_cast<double>(fp8.block_bytes()), 1.85) << hd;
  }
  const KvGeometry f16{4, 2, 8, 32, KvType::F16};
  const KvGeometry fp8{4, 2, 8, 32, KvType::Fp8};
  EXPECT_DOUBLE_EQ(static_cast<double>(f16.block_bytes()) / static_cast<double>(fp8.block_bytes()), 16.0 / 9.0);
}

}  // namespace
}  // namespace clm
