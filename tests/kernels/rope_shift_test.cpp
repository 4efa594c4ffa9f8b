// rope_shift.h: every path against the scalar reference bitwise; a shift by 0
// is the identity; a shift agrees with RoPE applied afresh at the new
// position (ops.h rope()) within the bounds derived below; +d then -d comes
// back; the elements past n_rot and the gaps between rows are never touched.
#include "kernels/rope_shift.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/ops.h"
#include "util/half.h"

namespace clm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kEps32 = 0x1p-24;  // half an ulp of 1 in f32: one rounding's relative error

struct Shape {
  int head_dim;
  int n_rot;
};

// Full heads of the usual sizes, partial rotation, and sizes that leave
// every kind of tail on the 8- and 16-lane paths (odd head_dim included).
constexpr Shape kShapes[] = {{64, 64}, {128, 128}, {80, 80}, {96, 96}, {48, 48}, {8, 8},  {16, 16}, {2, 2},
                             {128, 64}, {64, 32},  {96, 64}, {80, 40}, {10, 6},  {18, 18}, {34, 34}, {7, 4},
                             {33, 30},  {40, 0},   {56, 36}, {112, 100}};

std::size_t elem_bytes(KvType t) { return t == KvType::F16 ? 2 : 4; }

float get(const std::vector<std::byte>& b, KvType t, std::size_t i) {
  if (t == KvType::F16) {
    uint16_t h;
    std::memcpy(&h, b.data() + 2 * i, 2);
    return f16_to_f32(h);
  }
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

void put(std::vector<std::byte>& b, KvType t, std::size_t i, float v) {
  if (t == KvType::F16) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(b.data() + 2 * i, &h, 2);
  } else {
    std::memcpy(b.data() + 4 * i, &v, 4);
  }
}

// n_rows rows of head_dim random elements, stride apart; the gaps hold a
// byte pattern that no kernel may change. With specials, some elements are
// +-0, +-inf, NaN, f16 subnormals and large values.
std::vector<std::byte> make_rows(KvType t, int n_rows, std::size_t stride, int head_dim, unsigned seed,
                                 bool specials) {
  std::vector<std::byte> b(static_cast<std::size_t>(n_rows) * stride * elem_bytes(t), std::byte{0x5a});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const float special[] = {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), 3e-6f, -5e-7f,
                           1000.0f, -30000.0f};
  for (int r = 0; r < n_rows; ++r)
    for (int e = 0; e < head_dim; ++e) {
      float v = dist(rng);
      if (specials && rng() % 7 == 0) v = special[rng() % std::size(special)];
      put(b, t, static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(e), v);
    }
  return b;
}

// Bitwise, except that any NaN matches any NaN.
bool same_elem(const std::vector<std::byte>& a, const std::vector<std::byte>& b, KvType t, std::size_t i) {
  const float x = get(a, t, i);
  const float y = get(b, t, i);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  const std::size_t eb = elem_bytes(t);
  return std::memcmp(a.data() + eb * i, b.data() + eb * i, eb) == 0;
}

bool same_buffer(const std::vector<std::byte>& a, const std::vector<std::byte>& b, KvType t) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size() / elem_bytes(t); ++i)
    if (!same_elem(a, b, t, i)) return false;
  return true;
}

std::vector<float> factors(int n_rot, unsigned seed) {
  // llama-3 style: between 1 (high frequencies) and 8 (low ones).
  return test::random_floats(static_cast<std::size_t>(n_rot / 2), seed, 1.0f, 8.0f);
}

std::string describe(KernelPath path, KvType t, const RopeShiftParams& p, int32_t delta, std::size_t stride,
                     bool in_place) {
  return std::string(kernel_path_name(path)) + (t == KvType::F16 ? " f16" : " f32") + " hd=" +
         std::to_string(p.head_dim) + " n_rot=" + std::to_string(p.n_rot) + (p.neox ? " neox" : " adjacent") +
         (p.freq_factors ? " factors" : "") + " delta=" + std::to_string(delta) + " stride=" + std::to_string(stride) +
         (in_place ? " in place" : "");
}

TEST(RopeShift, EveryPathMatchesScalarBitwise) {
  constexpr int kRows = 37;  // more than one 16-row tile, and not a multiple of it
  unsigned seed = 1;
  for (const Shape& shape : kShapes)
    for (KvType t : {KvType::F16, KvType::F32})
      for (bool neox : {false, true})
        for (bool with_factors : {false, true}) {
          const auto ff = factors(shape.n_rot, seed);
          const RopeShiftParams p{shape.head_dim, shape.n_rot, 10000.0f, with_factors ? ff.data() : nullptr, neox};
          for (int32_t delta : {1, -7, 3000, -100000})
            for (std::size_t stride : {static_cast<std::size_t>(shape.head_dim),
                                       static_cast<std::size_t>(shape.head_dim) + 5}) {
              const RopeShiftTable table = make_rope_shift_table(p, delta);
              ++seed;
              const auto src = make_rows(t, kRows, stride, shape.head_dim, seed, seed % 3 == 0);
              const std::vector<std::byte> fill(src.size(), std::byte{0xc3});
              auto want = fill;
              rope_shift_rows_scalar(src.data(), want.data(), t, kRows, stride, p, table);
              auto want_in_place = src;
              rope_shift_rows_scalar(want_in_place.data(), want_in_place.data(), t, kRows, stride, p, table);
              for (KernelPath path : test::supported_paths()) {
                test::ScopedKernelPath scoped(path);
                auto got = fill;
                rope_shift_rows(src.data(), got.data(), t, kRows, stride, p, table);
                ASSERT_TRUE(same_buffer(got, want, t)) << describe(path, t, p, delta, stride, false);
                auto got_in_place = src;
                rope_shift_rows(got_in_place.data(), got_in_place.data(), t, kRows, stride, p, table);
                ASSERT_TRUE(same_buffer(got_in_place, want_in_place, t)) << describe(path, t, p, delta, stride, true);
              }
              // In place and out of place agree on the rows; the gaps keep
              // what each buffer had.
              for (int r = 0; r < kRows; ++r)
                for (int e = 0; e < shape.head_dim; ++e) {
                  const std::size_t i = static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(e);
                  ASSERT_TRUE(same_elem(want, want_in_place, t, i)) << describe(KernelPath::Scalar, t, p, delta, stride, true);
                }
              for (std::size_t b = 0; b < src.size(); ++b) {
                const std::size_t e = b / elem_bytes(t) % stride;
                if (e < static_cast<std::size_t>(shape.head_dim)) continue;
                ASSERT_EQ(want[b], std::byte{0xc3});
                ASSERT_EQ(want_in_place[b], std::byte{0x5a});
              }
            }
        }
}

TEST(RopeShift, ShiftByZeroIsTheIdentityBitForBit) {
  for (const Shape& shape : kShapes)
    for (KvType t : {KvType::F16, KvType::F32})
      for (bool neox : {false, true}) {
        const auto ff = factors(shape.n_rot, 5);
        const RopeShiftParams p{shape.head_dim, shape.n_rot, 500000.0f, ff.data(), neox};
        const RopeShiftTable table = make_rope_shift_table(p, 0);
        for (std::size_t i = 0; i < table.cos.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(table.cos[i]), std::bit_cast<uint32_t>(1.0f));
          ASSERT_EQ(std::bit_cast<uint32_t>(table.sin[i]), 0u);
        }
        const std::size_t stride = static_cast<std::size_t>(shape.head_dim) + 3;
        auto src = make_rows(t, 20, stride, shape.head_dim, 77, true);
        // A NaN with a payload, and -0 next to a negative partner: what
        // arithmetic by (1, 0) would not keep.
        if (t == KvType::F32) {
          const uint32_t nan = 0x7fc01234u;
          std::memcpy(src.data() + 4 * stride, &nan, 4);
        }
        put(src, t, 1, -1.5f);
        if (shape.head_dim >= 2) put(src, t, 0, -0.0f);
        for (KernelPath path : test::supported_paths()) {
          test::ScopedKernelPath scoped(path);
          auto out = src;
          std::vector<std::byte> fresh(src.size(), std::byte{0x5a});
          rope_shift_rows(src.data(), fresh.data(), t, 20, stride, p, table);
          rope_shift_rows(out.data(), out.data(), t, 20, stride, p, table);
          EXPECT_EQ(fresh, src) << kernel_path_name(path);
          EXPECT_EQ(out, src) << kernel_path_name(path);
        }
        auto ref = src;
        rope_shift_rows_scalar(src.data(), ref.data(), t, 20, stride, p, table);
        EXPECT_EQ(ref, src);
      }
}

// The elements past n_rot, whatever they hold, come out as they went in.
TEST(RopeShift, ElementsPastNRotAreCopiedUnchanged) {
  for (KvType t : {KvType::F16, KvType::F32})
    for (bool neox : {false, true})
      for (Shape shape : {Shape{128, 64}, Shape{64, 32}, Shape{33, 30}, Shape{40, 0}}) {
        const RopeShiftParams p{shape.head_dim, shape.n_rot, 10000.0f, nullptr, neox};
        const RopeShiftTable table = make_rope_shift_table(p, 1234);
        const std::size_t stride = static_cast<std::size_t>(shape.head_dim);
        const auto src = make_rows(t, 9, stride, shape.head_dim, 11, true);
        for (KernelPath path : test::supported_paths()) {
          test::ScopedKernelPath scoped(path);
          std::vector<std::byte> out(src.size(), std::byte{0});
          auto in_place = src;
          rope_shift_rows(src.data(), out.data(), t, 9, stride, p, table);
          rope_shift_rows(in_place.data(), in_place.data(), t, 9, stride, p, table);
          const std::size_t eb = elem_bytes(t);
          for (int r = 0; r < 9; ++r) {
            const std::size_t from = (static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(shape.n_rot)) * eb;
            const std::size_t n = static_cast<std::size_t>(shape.head_dim - shape.n_rot) * eb;
            EXPECT_EQ(std::memcmp(out.data() + from, src.data() + from, n), 0) << kernel_path_name(path);
            EXPECT_EQ(std::memcmp(in_place.data() + from, src.data() + from, n), 0) << kernel_path_name(path);
          }
        }
      }
}

// Error bounds of the comparison with a fresh rope(), per rotated pair of
// radius rho (the length of the unrotated pair, which every rotation keeps).
//
// rope() takes pair i's angle in float as pos * s^i with s = powf(base,
// -2/n_rot) (within an ulp, so relative 2 * kEps32 on s, i times) after i
// roundings of kEps32 each, then one more division by the factor: its angle
// is off by at most pos * theta_i * (3i + 2) * kEps32, theta_i the exact
// frequency. cosf/sinf and the rotation's own roundings add a few kEps32
// times rho. The shift's table is cos/sin of an angle exact in double rounded
// once (kEps32 each), and its fma and product round twice. Rotations keep
// distances, so the reference's error at p carries through the shift
// unchanged; the two angle errors (at p and at p + d) add up, and so do the
// constant terms: 16 kEps32 is twice what they sum to. The angle term grows
// with the position because float carries the angle's absolute value: at
// position 5000, theta_0 is known to within about 3e-4.
double pair_bound(const RopeShiftParams& p, int pos_a, int pos_b, int i, double rho) {
  const double theta = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot) /
                       (p.freq_factors ? static_cast<double>(p.freq_factors[i]) : 1.0);
  const double angle_err = static_cast<double>(pos_a + pos_b) * theta * (3.0 * i + 2.0) * kEps32;
  return rho * (angle_err + 16.0 * kEps32);
}

// One f16 ulp at the binade of x.
double f16_ulp(double x) { return std::ldexp(1.0, std::max(std::ilogb(std::max(x, 6.1e-5)), -14) - 10); }

struct PairIdx {
  std::size_t a, b;
};
PairIdx pair_of(const RopeShiftParams& p, int i) {
  const std::size_t ii = static_cast<std::size_t>(i);
  return p.neox ? PairIdx{ii, ii + static_cast<std::size_t>(p.n_rot / 2)} : PairIdx{2 * ii, 2 * ii + 1};
}

TEST(RopeShift, ShiftAgreesWithRopeAtTheNewPosition) {
  const Shape shapes[] = {{128, 128}, {64, 64}, {64, 32}, {80, 80}, {96, 64}};
  double worst_f32 = 0.0, worst_f16 = 0.0;  // error / bound
  unsigned seed = 100;
  for (const Shape& shape : shapes)
    for (bool neox : {false, true})
      for (bool with_factors : {false, true})
        for (float base : {10000.0f, 500000.0f}) {
          const auto ff = factors(shape.n_rot, seed);
          const RopeShiftParams p{shape.head_dim, shape.n_rot, base, with_factors ? ff.data() : nullptr, neox};
          for (int pos : {0, 17, 1000, 5000})
            for (int32_t delta : {1, 100, 3000, -17, -1000}) {
              if (pos + delta < 0) continue;
              const auto k = test::random_floats(static_cast<std::size_t>(shape.head_dim), ++seed, -3.0f, 3.0f);
              auto at_p = k, at_new = k;
              rope(at_p.data(), 1, shape.head_dim, shape.n_rot, pos, base, p.freq_factors, neox);
              rope(at_new.data(), 1, shape.head_dim, shape.n_rot, pos + delta, base, p.freq_factors, neox);
              const RopeShiftTable table = make_rope_shift_table(p, delta);
              double rho_max = 0.0;
              for (int i = 0; i < shape.n_rot / 2; ++i) {
                const auto [a, b] = pair_of(p, i);
                rho_max = std::max(rho_max, std::hypot(static_cast<double>(k[a]), static_cast<double>(k[b])));
              }
              const auto n = static_cast<std::size_t>(shape.head_dim);
              for (KvType t : {KvType::F32, KvType::F16}) {
                std::vector<std::byte> row(n * elem_bytes(t));
                for (std::size_t e = 0; e < n; ++e) put(row, t, e, at_p[e]);
                rope_shift_rows(row.data(), row.data(), t, 1, n, p, table);
                for (int i = 0; i < shape.n_rot / 2; ++i) {
                  const auto [a, b] = pair_of(p, i);
                  const double rho = std::hypot(static_cast<double>(k[a]), static_cast<double>(k[b]));
                  double bound = pair_bound(p, pos, pos + delta, i, rho);
                  // f16: the input and the output each rounded once, half
                  // an ulp per element at most, so under 1.3 ulps of the
                  // largest radius for both; 2 ulps leave room.
                  if (t == KvType::F16) bound += 2.0 * f16_ulp(rho_max);
                  for (std::size_t e : {a, b}) {
                    const double err = std::abs(static_cast<double>(get(row, t, e)) - static_cast<double>(at_new[e]));
                    ASSERT_LE(err, bound) << (t == KvType::F16 ? "f16" : "f32") << " hd=" << shape.head_dim
                                          << " n_rot=" << shape.n_rot << (neox ? " neox" : "") << " pos=" << pos
                                          << " delta=" << delta << " pair " << i;
                    double& worst = t == KvType::F16 ? worst_f16 : worst_f32;
                    worst = std::max(worst, err / bound);
                  }
                }
                for (std::size_t e = static_cast<std::size_t>(shape.n_rot); e < n; ++e)
                  ASSERT_EQ(get(row, t, e), t == KvType::F16 ? f16_to_f32(f32_to_f16(k[e])) : k[e]);
              }
            }
        }
  std::printf("worst error / bound: f32 %.3f, f16 %.3f\n", worst_f32, worst_f16);
}

// Shifting by d and back by -d: the two tables are the same float rotation
// and its transpose (cos is even and sin odd, exactly, in double and after
// rounding), whose product is (c^2 + s^2) I, within 2 kEps32 of I; each pass
// rounds twice more per element. f16 rounds once per pass.
TEST(RopeShift, ShiftThereAndBackReturnsTheOriginal) {
  for (const Shape& shape : {Shape{128, 128}, Shape{80, 80}, Shape{64, 32}, Shape{18, 18}})
    for (bool neox : {false, true})
      for (int32_t delta : {1, 77, 3000, -5000}) {
        const RopeShiftParams p{shape.head_dim, shape.n_rot, 10000.0f, nullptr, neox};
        const RopeShiftTable there = make_rope_shift_table(p, delta);
        const RopeShiftTable back = make_rope_shift_table(p, -delta);
        const auto n = static_cast<std::size_t>(shape.head_dim);
        for (KvType t : {KvType::F32, KvType::F16}) {
          const auto src = make_rows(t, 5, n, shape.head_dim, static_cast<unsigned>(delta + 9000), false);
          for (KernelPath path : test::supported_paths()) {
            test::ScopedKernelPath scoped(path);
            auto row = src;
            rope_shift_rows(row.data(), row.data(), t, 5, n, p, there);
            rope_shift_rows(row.data(), row.data(), t, 5, n, p, back);
            for (std::size_t r = 0; r < 5; ++r) {
              double rho_max = 0.0;
              for (int i = 0; i < shape.n_rot / 2; ++i) {
                const auto [a, b] = pair_of(p, i);
                rho_max = std::max(rho_max, std::hypot(static_cast<double>(get(src, t, r * n + a)),
                                                       static_cast<double>(get(src, t, r * n + b))));
              }
              for (int i = 0; i < shape.n_rot / 2; ++i) {
                const auto [a, b] = pair_of(p, i);
                const double rho = std::hypot(static_cast<double>(get(src, t, r * n + a)),
                                              static_cast<double>(get(src, t, r * n + b)));
                const double bound = t == KvType::F32 ? rho * 8.0 * kEps32 : 2.0 * f16_ulp(rho_max);
                for (std::size_t e : {a, b})
                  ASSERT_LE(std::abs(static_cast<double>(get(row, t, r * n + e)) - get(src, t, r * n + e)), bound)
                      << kernel_path_name(path) << " hd=" << shape.head_dim << " delta=" << delta;
              }
            }
          }
        }
      }
}

TEST(RopeShift, TableIsCosSinOfDeltaTimesTheta) {
  const std::vector<float> ff = {1.0f, 2.0f, 4.0f, 8.0f};
  const RopeShiftParams p{8, 8, 10000.0f, ff.data(), false};
  const RopeShiftTable t = make_rope_shift_table(p, -3000);
  ASSERT_EQ(t.delta, -3000);
  ASSERT_EQ(t.cos.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const double angle = -3000.0 * std::pow(10000.0, -2.0 * i / 8.0) / ff[static_cast<std::size_t>(i)];
    EXPECT_EQ(t.cos[static_cast<std::size_t>(i)], static_cast<float>(std::cos(angle)));
    EXPECT_EQ(t.sin[static_cast<std::size_t>(i)], static_cast<float>(std::sin(angle)));
  }
}

}  // namespace
}  // namespace clm
