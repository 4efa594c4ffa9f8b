#include "util/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

namespace clm {
namespace {

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16(f), h) << "h=" << h;
  }
}

TEST(Half, F32ToF16RoundsToNearestEven) {
  // 1 + 2^-11 is exactly half way between 1 and the next f16 (1 + 2^-10): ties to even (1.0).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);
  // Just above the tie rounds up.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01u);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bffu);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00u);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
}

TEST(Half, Bf16KeepsTopBitsWithRounding) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80u);
  EXPECT_EQ(bf16_to_f32(0x3f80u), 1.0f);
  const float x = std::bit_cast<float>(0x3f808000u);  // tie: rounds to even (0x3f80)
  EXPECT_EQ(f32_to_bf16(x), 0x3f80u);
  const float y = std::bit_cast<float>(0x3f818000u);  // tie: rounds to even (0x3f82)
  EXPECT_EQ(f32_to_bf16(y), 0x3f82u);
}

}  // namespace
}  // namespace clm
