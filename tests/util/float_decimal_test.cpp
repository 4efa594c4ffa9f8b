#include "util/float_decimal.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace clm {
namespace {

// The decimal a double is written as, in the shortest form that reads back
// as that double (what JSON writers print).
std::string shortest_of_double(double d) {
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, d);
  return std::string(text, r.ptr);
}

std::string shortest_of_float(float f) {
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, f);
  return std::string(text, r.ptr);
}

TEST(FloatDecimal, AFloatPrintsAsItsOwnShortestDecimal) {
  EXPECT_EQ(shortest_of_double(static_cast<double>(0.15f)), "0.15000000596046448");  // the widening
  EXPECT_EQ(as_shortest_decimal(0.15f), 0.15);
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(0.15f)), "0.15");
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(-2.3025851f)), "-2.3025851");
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(1.0f)), "1");
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(1e-30f)), "1e-30");
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(std::numeric_limits<float>::max())), "3.4028235e+38");
  EXPECT_EQ(shortest_of_double(as_shortest_decimal(std::numeric_limits<float>::denorm_min())), "1e-45");
  EXPECT_TRUE(std::signbit(as_shortest_decimal(-0.0f)));
  EXPECT_EQ(as_shortest_decimal(-std::numeric_limits<float>::infinity()), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(as_shortest_decimal(std::numeric_limits<float>::quiet_NaN())));
}

// Whether the float's shortest decimal, read as a double and narrowed,
// gives the float back (it does for all but two floats).
bool reads_back_through_a_double(float f) {
  const std::string text = shortest_of_float(f);
  double d = 0.0;
  std::from_chars(text.data(), text.data() + text.size(), d);
  return static_cast<float>(d) == f;
}

// 7.038531e-26 is the shortest decimal of the float 0x15AE43FD, but read as
// a double it rounds to a double that narrows to the next float: rounding
// twice lands elsewhere. That float is written with the double's digits.
TEST(FloatDecimal, TheDoubleRoundingCaseKeepsItsFloat) {
  for (uint32_t bits : {0x15AE43FDu, 0x95AE43FDu}) {
    const float f = std::bit_cast<float>(bits);
    ASSERT_FALSE(reads_back_through_a_double(f));
    const double d = as_shortest_decimal(f);
    EXPECT_EQ(d, static_cast<double>(f));
    EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(d)), bits);
    const std::string text = shortest_of_double(d);
    float as_float = 0.0f;
    std::from_chars(text.data(), text.data() + text.size(), as_float);
    EXPECT_EQ(std::bit_cast<uint32_t>(as_float), bits) << text;
  }
}

// Over a spread of every sign, exponent and mantissa: the double reads back
// as the float both ways a client may parse it, and prints as the float's
// shortest decimal.
TEST(FloatDecimal, EveryFloatReadsBackExactly) {
  int checked = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 1999) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isfinite(f)) continue;
    const double d = as_shortest_decimal(f);
    ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(d)), static_cast<uint32_t>(bits)) << f;
    const std::string text = shortest_of_double(d);
    if (!reads_back_through_a_double(f)) continue;  // the rare double rounding, below
    ASSERT_EQ(text, shortest_of_float(f)) << "bits " << bits;
    float as_float = 0.0f;
    std::from_chars(text.data(), text.data() + text.size(), as_float);
    ASSERT_EQ(std::bit_cast<uint32_t>(as_float), static_cast<uint32_t>(bits)) << text;
    ++checked;
  }
  EXPECT_GT(checked, 2'000'000);
}

}  // namespace
}  // namespace clm
