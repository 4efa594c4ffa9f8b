// The q4_0 KV row: its layout and size, which heads it takes, its rounding
// (llama.cpp's q4_0 convention, deterministic, per token, the same on every
// kernel path), its accuracy, the capacity it buys, and what moving a q4_0 K
// row with a RoPE shift costs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/attention.h"
#include "kernels/kv_geometry.h"
#include "kernels/kv_row_codec.h"
#include "kernels/kv_row_move.h"
#include "util/half.h"

namespace clm {
namespace {

float stored_scale(const std::vector<std::byte>& row, std::size_t group) {
  uint16_t d;
  std::memcpy(&d, row.data() + group * 18, 2);
  return f16_to_f32(d);
}

TEST(KvRowQ4Codec, RowSizesAndWhichHeadsItTakes) {
  EXPECT_EQ(kv_row_bytes(KvType::Q4_0, 64), 36u);  // two groups: 2-byte scale and 16 bytes of nibbles each
  EXPECT_EQ(kv_row_bytes(KvType::Q4_0, 128), 72u);
  EXPECT_EQ(kv_row_bytes(KvType::Q4_0, 8), 6u);  // one group: the whole head
  EXPECT_EQ(kv_row_bytes(KvType::Q4_0, 24), 14u);
  for (int hd : {2, 8, 24, 30, 32, 64, 96, 128, 256}) EXPECT_EQ(kv_type_unsupported(KvType::Q4_0, hd), "") << hd;
  for (int hd : {7, 31, 33, 40, 80}) {
    const std::string why = kv_type_unsupported(KvType::Q4_0, hd);
    EXPECT_NE(why.find("q4_0"), std::string::npos) << hd << ": " << why;
    EXPECT_NE(why.find("head_dim " + std::to_string(hd)), std::string::npos) << why;
  }
  EXPECT_EQ(parse_kv_type("q4_0"), KvType::Q4_0);
  EXPECT_TRUE(is_quantized(KvType::Q4_0));
  EXPECT_EQ(kv_types_text({KvType::Q8_0, KvType::Q4_0}), "k=q8_0,v=q4_0");
}

// The bytes of a chosen row, worked out by hand. The largest magnitude is
// -16, so d = -16 / -8 = 2 exactly and -16 is q = -8; each other value is
// x / 2 rounded (halves away from zero) and clamped to [-8, 7]; nibbles
// hold q + 8, element 2j low in byte j, 2j + 1 high.
TEST(KvRowQ4Codec, RoundingAndNibbleOrderAreTheDocumentedOnes) {
  const std::vector<float> x = {-16.0f, 3.0f, -3.0f, 0.9f, 15.0f, 16.0f, 5.2f, -0.99f};
  // q: -8, 2 (1.5 away from zero), -2, 0, 7 (7.5 rounds to 8, clamped), 7 (8 clamped), 3, 0 (-0.495)
  const int q[8] = {-8, 2, -2, 0, 7, 7, 3, 0};
  std::vector<std::byte> row(kv_row_bytes(KvType::Q4_0, 8));
  quantize_q4_0_row(x.data(), 8, row.data());
  EXPECT_EQ(stored_scale(row, 0), 2.0f);
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(static_cast<unsigned>(row[2 + static_cast<std::size_t>(j)]),
              static_cast<unsigned>((q[2 * j] + 8) | (q[2 * j + 1] + 8) << 4))
        << "byte " << j;
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(read_q4_0_element(row.data(), i), 2.0f * static_cast<float>(q[i])) << i;
  // A positive largest value gives a negative scale, and reads back exactly.
  const std::vector<float> y = {8.0f, -4.0f, 1.0f, 0.0f};
  std::vector<std::byte> r2(kv_row_bytes(KvType::Q4_0, 4));
  quantize_q4_0_row(y.data(), 4, r2.data());
  EXPECT_EQ(stored_scale(r2, 0), -1.0f);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(read_q4_0_element(r2.data(), i), y[i]) << i;
}

TEST(KvRowQ4Codec, EdgeValuesStoreSafely) {
  std::vector<std::byte> row(kv_row_bytes(KvType::Q4_0, 32));
  std::vector<float> x(32, 0.0f), back(32);
  quantize_q4_0_row(x.data(), 32, row.data());  // zeros: d = 0, q = 0
  decode_kv_row(KvType::Q4_0, row.data(), 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[5] = 0.75f;
  x[6] = -0.375f;
  quantize_q4_0_row(x.data(), 32, row.data());  // NaN stores 0 and is never the largest
  decode_kv_row(KvType::Q4_0, row.data(), 32, back.data());
  EXPECT_EQ(back[3], 0.0f);
  EXPECT_EQ(back[5], 0.75f);
  EXPECT_EQ(back[6], -0.375f);
  x[3] = 1e-30f;  // a scale that rounds to f16 zero
  x[5] = -1e-30f;
  x[6] = 0.0f;
  quantize_q4_0_row(x.data(), 32, row.data());
  decode_kv_row(KvType::Q4_0, row.data(), 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  x[7] = std::numeric_limits<float>::infinity();  // a scale past f16: the group reads as zeros, not NaN
  x[8] = 1.0f;
  quantize_q4_0_row(x.data(), 32, row.data());
  decode_kv_row(KvType::Q4_0, row.data(), 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

// Each value within half a step (|d| / 2) of what it reads back as, plus the
// f16 rounding of d (at most 8 * |d| * 2^-11), except values of the other
// sign than the largest beyond 7.5 steps, which are clamped to 7 steps.
TEST(KvRowQ4Codec, ErrorIsWithinHalfAStepPerGroup) {
  for (int hd : {8, 24, 64, 128}) {
    const auto x = test::random_floats(static_cast<std::size_t>(hd), 7u + static_cast<unsigned>(hd), -3.0f, 3.0f);
    std::vector<std::byte> row(kv_row_bytes(KvType::Q4_0, hd));
    std::vector<float> back(static_cast<std::size_t>(hd));
    encode_kv_row(KvType::Q4_0, x.data(), hd, row.data());
    decode_kv_row(KvType::Q4_0, row.data(), hd, back.data());
    const int group = q4_group_size(hd);
    for (int g0 = 0; g0 < hd; g0 += group) {
      float m = 0.0f;
      for (int i = g0; i < g0 + group; ++i)
        if (std::fabs(x[static_cast<std::size_t>(i)]) > std::fabs(m)) m = x[static_cast<std::size_t>(i)];
      const double d = std::fabs(m) / 8.0;
      for (int i = g0; i < g0 + group; ++i) {
        const double xi = x[static_cast<std::size_t>(i)];
        const double err = std::fabs(back[static_cast<std::size_t>(i)] - xi);
        const bool clamped = xi * m < 0 && std::fabs(xi) > 7.5 * d;
        EXPECT_LE(err, (clamped ? std::fabs(xi) - 7 * d : d / 2) + 8 * d * std::ldexp(1.0, -10))
            << "hd " << hd << " i " << i;
      }
    }
  }
}

// That a q4_0 row depends on its own token only, on every path, is
// KvRowCodec.QuantizedRowsDependOnTheirOwnTokenOnlyOnEveryPath.

// With the same memory, a q4_0 block holds at least 3.4x the tokens of an
// f16 one once heads are a group wide or more (64: 128 bytes against 36,
// 3.56x); with head_dim 8 the scale costs a third of the row and the gain is
// 2.67x. Mixed types take each their own row size.
TEST(KvRowQ4Codec, BlocksAreSmallerByTheDocumentedRatio) {
  for (int hd : {32, 64, 128}) {
    const KvGeometry f16{4, 2, hd, 32, KvType::F16};
    const KvGeometry q4{4, 2, hd, 32, KvType::Q4_0};
    EXPECT_GE(static_cast<double>(f16.block_bytes()) / static_cast<double>(q4.block_bytes()), 3.4) << hd;
  }
  const KvGeometry f16{4, 2, 8, 32, KvType::F16};
  const KvGeometry q4{4, 2, 8, 32, KvType::Q4_0};
  EXPECT_DOUBLE_EQ(static_cast<double>(f16.block_bytes()) / static_cast<double>(q4.block_bytes()), 16.0 / 6.0);
  const KvGeometry mixed{4, 2, 64, 32, {KvType::Q8_0, KvType::Q4_0}};
  EXPECT_EQ(mixed.layer_bytes(), 2u * 32u * (68u + 36u));
  EXPECT_EQ(mixed.v_offset(1, 0), mixed.layer_bytes() + 2u * 32u * 68u);
}

// Moving q4_0 rows with a position delta (K re-rotated through f32 and
// quantized again, V copied) is KvRowCodec.QuantizedRowMoveRotatesThroughF32AndCopiesV.

}  // namespace
}  // namespace clm
