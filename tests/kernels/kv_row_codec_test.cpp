// The q8_0 KV row: its layout and size, its rounding (deterministic, per
// token, the same on every kernel path), its accuracy, and what moving a
// q8_0 row with a RoPE shift costs.
#include "kernels/kv_row_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/attention.h"
#include "kernels/kv_geometry.h"
#include "kernels/kv_type.h"
#include "kernels/kv_row_move.h"
#include "util/half.h"

namespace clm {
namespace {

TEST(KvRowCodec, RowSizesAndWhichHeadsQ8Takes) {
  EXPECT_EQ(kv_row_bytes(KvType::F16, 64), 128u);
  EXPECT_EQ(kv_row_bytes(KvType::F32, 64), 256u);
  EXPECT_EQ(kv_row_bytes(KvType::Q8_0, 64), 68u);   // two groups of 32, a 2-byte scale each
  EXPECT_EQ(kv_row_bytes(KvType::Q8_0, 128), 136u);
  EXPECT_EQ(kv_row_bytes(KvType::Q8_0, 8), 10u);    // one group: the whole head
  EXPECT_EQ(kv_row_bytes(KvType::Q8_0, 24), 26u);
  for (int hd : {8, 24, 31, 32, 64, 96, 128, 256}) EXPECT_EQ(kv_type_unsupported(KvType::Q8_0, hd), "") << hd;
  for (int hd : {40, 80, 33}) EXPECT_NE(kv_type_unsupported(KvType::Q8_0, hd), "") << hd;
  for (int hd : {40, 80, 33}) EXPECT_EQ(kv_type_unsupported(KvType::F16, hd), "") << hd;
}

TEST(KvRowCodec, TypeNamesRoundTrip) {
  for (int i = 0; i < kKvTypeCount; ++i) {
    const auto t = static_cast<KvType>(i);
    EXPECT_EQ(parse_kv_type(kv_type_name(t)), t);
  }
  EXPECT_FALSE(parse_kv_type("q4_1"));
  EXPECT_FALSE(parse_kv_type("F16"));
  EXPECT_EQ(kv_types_text({KvType::Q8_0, KvType::F16}), "k=q8_0,v=f16");
  EXPECT_EQ(kv_types_text(KvType::Q8_0), "q8_0");
}

// The stored bytes of a chosen row, worked out by hand: amax 127 gives
// d = 1 exactly, so each value is its own rounding (halves away from zero).
TEST(KvRowCodec, Q8RoundingIsTheDocumentedOne) {
  std::vector<float> x(8, 0.0f);
  x[0] = 127.0f;
  x[1] = -2.5f;  // away from zero: -3
  x[2] = 2.5f;   // 3
  x[3] = 0.49f;  // 0
  x[4] = -126.6f;
  std::vector<std::byte> row(kv_row_bytes(KvType::Q8_0, 8));
  quantize_q8_0_row(x.data(), 8, row.data());
  uint16_t d;
  std::memcpy(&d, row.data(), 2);
  EXPECT_EQ(f16_to_f32(d), 1.0f);
  const int8_t want[8] = {127, -3, 3, 0, -127, 0, 0, 0};
  EXPECT_EQ(std::memcmp(row.data() + 2, want, 8), 0);
}

TEST(KvRowCodec, Q8EdgeValuesStoreSafely) {
  std::vector<std::byte> row(kv_row_bytes(KvType::Q8_0, 32));
  std::vector<float> x(32, 0.0f), back(32);
  quantize_q8_0_row(x.data(), 32, row.data());  // zeros: d = 0, q = 0
  decode_kv_row(KvType::Q8_0, row.data(), 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[5] = 0.75f;
  quantize_q8_0_row(x.data(), 32, row.data());  // NaN stores 0, the rest as usual
  decode_kv_row(KvType::Q8_0, row.data(), 32, back.data());
  EXPECT_EQ(back[3], 0.0f);
  EXPECT_NEAR(back[5], 0.75f, 0.75f / 254.0f);
  x[3] = 1e-30f;  // a scale that rounds to f16 zero
  x[5] = -1e-30f;
  quantize_q8_0_row(x.data(), 32, row.data());
  decode_kv_row(KvType::Q8_0, row.data(), 32, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

// Each value within half a step (d / 2) of what it reads back as, plus the
// f16 rounding of d (at most 127 * d * 2^-11).
TEST(KvRowCodec, Q8ErrorIsWithinHalfAStepPerGroup) {
  for (int hd : {8, 24, 64, 128}) {
    const auto x = test::random_floats(static_cast<std::size_t>(hd), 5u + static_cast<unsigned>(hd), -3.0f, 3.0f);
    std::vector<std::byte> row(kv_row_bytes(KvType::Q8_0, hd));
    std::vector<float> back(static_cast<std::size_t>(hd));
    encode_kv_row(KvType::Q8_0, x.data(), hd, row.data());
    decode_kv_row(KvType::Q8_0, row.data(), hd, back.data());
    const int group = q8_group_size(hd);
    for (int g0 = 0; g0 < hd; g0 += group) {
      float amax = 0.0f;
      for (int i = g0; i < g0 + group; ++i) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(i)]));
      const double d = amax / 127.0;
      for (int i = g0; i < g0 + group; ++i)
        EXPECT_LE(std::fabs(back[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(i)]),
                  d / 2 + 127 * d * std::ldexp(1.0, -11))
            << "hd " << hd << " i " << i;
    }
  }
}

// A token's stored row is the same whatever else the block holds and in
// whatever order tokens are written (one at a time as in decode, or a whole
// block), and the same on every kernel path, for each quantized type alone
// and beside f16.
TEST(KvRowCodec, QuantizedRowsDependOnTheirOwnTokenOnlyOnEveryPath) {
  for (KvTypes types : {KvTypes{KvType::Q8_0}, KvTypes{KvType::Q4_0}, KvTypes{KvType::F16, KvType::Q4_0}, KvTypes{KvType::Fp8}}) {
    const KvGeometry g{2, 2, 64, 8, types};
    const std::size_t per_token = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim;
    std::vector<std::vector<float>> k, v;
    for (unsigned t = 0; t < 8; ++t) {
      k.push_back(test::random_floats(per_token, 100 + t));
      v.push_back(test::random_floats(per_token, 200 + t));
    }
    std::vector<std::byte> want(g.block_bytes(), std::byte{0});
    {
      const test::ScopedKernelPath scalar(KernelPath::Scalar);
      for (int t = 0; t < 8; ++t)
        for (int layer = 0; layer < 2; ++layer) write_kv(k[t].data(), v[t].data(), g, layer, want.data(), t);
    }
    for (KernelPath path : test::supported_paths()) {
      const test::ScopedKernelPath scoped(path);
      // Other tokens first (garbage in the block), then the real ones backwards.
      std::vector<std::byte> got(g.block_bytes(), std::byte{0x33});
      const auto other = test::random_floats(per_token, 999, -50.0f, 50.0f);
      for (int t = 0; t < 8; ++t)
        for (int layer = 0; layer < 2; ++layer) write_kv(other.data(), other.data(), g, layer, got.data(), t);
      for (int t = 7; t >= 0; --t)
        for (int layer = 0; layer < 2; ++layer) write_kv(k[t].data(), v[t].data(), g, layer, got.data(), t);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0)
          << kernel_path_name(path) << " " << kv_types_text(types);
    }
  }
}

// With the same memory, a q8_0 block holds at least 1.85x the tokens of an
// f16 one once heads are a group wide or more; with head_dim 8 the scale
// costs a fifth of the row and the gain is 1.6x.
TEST(KvRowCodec, Q8BlocksAreSmallerByTheDocumentedRatio) {
  for (int hd : {32, 64, 128}) {
    const KvGeometry f16{4, 2, hd, 32, KvType::F16};
    const KvGeometry q8{4, 2, hd, 32, KvType::Q8_0};
    EXPECT_GE(static_cast<double>(f16.block_bytes()) / static_cast<double>(q8.block_bytes()), 1.85) << hd;
  }
  const KvGeometry f16{4, 2, 8, 32, KvType::F16};
  const KvGeometry q8{4, 2, 8, 32, KvType::Q8_0};
  EXPECT_DOUBLE_EQ(static_cast<double>(f16.block_bytes()) / static_cast<double>(q8.block_bytes()), 1.6);
  // Mixed types: K and V each take their own row size.
  const KvGeometry mixed{4, 2, 64, 32, {KvType::Q8_0, KvType::F16}};
  EXPECT_EQ(mixed.layer_bytes(), 2u * 32u * (68u + 128u));
  EXPECT_EQ(mixed.v_offset(1, 0), mixed.layer_bytes() + 2u * 32u * 68u);
}

// Moving quantized rows with a position delta re-rotates K through f32 and
// quantizes it again: the result is exactly that (and not the source), the
// V rows are copied bit for bit, and a delta of 0 copies K bit for bit too.
TEST(KvRowCodec, QuantizedRowMoveRotatesThroughF32AndCopiesV) {
  for (KvType type : {KvType::Q8_0, KvType::Q4_0, KvType::Fp8}) {
    const KvGeometry g{2, 2, 64, 8, type};
    const RopeShiftParams rope{.head_dim = 64, .n_rot = 64, .freq_base = 10000.0f};
    std::vector<std::byte> src(g.block_bytes()), dst(g.block_bytes(), std::byte{0});
    const std::size_t per_token = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim;
    for (int t = 0; t < 8; ++t) {
      const auto k = test::random_floats(per_token, 300u + static_cast<unsigned>(t));
      const auto v = test::random_floats(per_token, 400u + static_cast<unsigned>(t));
      for (int layer = 0; layer < 2; ++layer) write_kv(k.data(), v.data(), g, layer, src.data(), t);
    }
    const RopeShiftTable table = make_rope_shift_table(rope, 5);
    move_kv_rows(g, {src.data(), 1, dst.data(), 3, 4}, rope, table);
    std::vector<float> row(64);
    std::vector<std::byte> want(g.k_row_bytes());
    for (int layer = 0; layer < 2; ++layer)
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < 4; ++r) {
          const std::byte* sk = src.data() + g.k_offset(layer, h) + static_cast<std::size_t>(1 + r) * g.k_row_bytes();
          const std::byte* dk = dst.data() + g.k_offset(layer, h) + static_cast<std::size_t>(3 + r) * g.k_row_bytes();
          decode_kv_row(type, sk, 64, row.data());
          rope_shift_rows_scalar(reinterpret_cast<const std::byte*>(row.data()),
                                 reinterpret_cast<std::byte*>(row.data()), KvType::F32, 1, 64, rope, table);
          encode_kv_row(type, row.data(), 64, want.data());
          const auto where = ::testing::Message() << kv_type_name(type) << " " << layer << " " << h << " " << r;
          EXPECT_EQ(std::memcmp(dk, want.data(), want.size()), 0) << where;
          EXPECT_NE(std::memcmp(dk, sk, want.size()), 0) << where << ": a shift by 5 changes the stored K";
          const std::byte* sv = src.data() + g.v_offset(layer, h) + static_cast<std::size_t>(1 + r) * g.v_row_bytes();
          const std::byte* dv = dst.data() + g.v_offset(layer, h) + static_cast<std::size_t>(3 + r) * g.v_row_bytes();
          EXPECT_EQ(std::memcmp(dv, sv, g.v_row_bytes()), 0) << where;
        }
    std::vector<std::byte> copy(g.block_bytes(), std::byte{0});
    move_kv_rows(g, {src.data(), 0, copy.data(), 0, 8}, rope, make_rope_shift_table(rope, 0));
    EXPECT_EQ(std::memcmp(copy.data(), src.data(), src.size()), 0) << kv_type_name(type);
  }
}

}  // namespace
}  // namespace clm
