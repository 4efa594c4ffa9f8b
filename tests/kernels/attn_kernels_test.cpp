// attn_kernels.h: the exp against std::exp, and every path against the
// scalar reference. The paths are meant to agree bitwise, so that is what
// is checked; accuracy is checked
// against double-precision references with the tolerances stated below.
#include "kernels/attn_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kv_row_codec.h"
#include "util/half.h"

namespace clm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

bool same_bits(float a, float b) { return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// Distance in representable floats between two finite non-negative floats.
int64_t ulps(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<uint32_t>(a)) - static_cast<int64_t>(std::bit_cast<uint32_t>(b)));
}

std::vector<float> exp_inputs() {
  std::vector<float> x;
  for (float v = -120.0f; v <= 95.0f; v += 0.0009765625f * 1.37f) x.push_back(v);
  for (float v : {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), 88.72f, 88.73f, -87.33f,
                  -103.97f, -104.0f, -110.0f, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f})
    x.push_back(v);
  return x;
}

// Within 2 ulp of the correctly rounded exp where that is a normal float;
// within one subnormal spacing (2^-149) where it is subnormal; 0 below, inf above.
TEST(AttnKernels, ExpIsAccurateAgainstStdExp) {
  const auto x = exp_inputs();
  for (KernelPath path : test::supported_paths()) {
    std::vector<float> y(x.size());
    attn_kernels(path).exp_row(x.data(), y.data(), x.size());
    int64_t worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
      if (std::isnan(x[i])) {
        ASSERT_TRUE(std::isnan(y[i])) << kernel_path_name(path);
      } else if (std::isinf(want) || want == 0.0f) {
        ASSERT_EQ(y[i], want) << kernel_path_name(path) << " x=" << x[i];
      } else if (want < std::numeric_limits<float>::min()) {
        ASSERT_LE(std::abs(y[i] - want), std::ldexp(1.0f, -149)) << kernel_path_name(path) << " x=" << x[i];
      } else {
        worst = std::max(worst, ulps(y[i], want));
        ASSERT_LE(ulps(y[i], want), 2) << kernel_path_name(path) << " x=" << x[i] << " got " << y[i];
      }
    }
    std::printf("%s exp: worst %lld ulp over %zu inputs\n", std::string(kernel_path_name(path)).c_str(),
                static_cast<long long>(worst), x.size());
  }
}

TEST(AttnKernels, ExpMatchesScalarBitwiseOnEveryPathAndTail) {
  const auto x = exp_inputs();
  std::vector<float> want(x.size());
  scalar_attn_kernels().exp_row(x.data(), want.data(), x.size());
  for (KernelPath path : test::supported_paths()) {
    for (std::size_t n : {x.size(), std::size_t{1}, std::size_t{7}, std::size_t{17}}) {
      std::vector<float> y(n, 7.0f);
      attn_kernels(path).exp_row(x.data() + x.size() - n, y.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_TRUE(same_bits(y[i], want[x.size() - n + i])) << kernel_path_name(path) << " x=" << x[x.size() - n + i];
    }
  }
}

// NaN at the start, in the middle and at the end: in the whole registers,
// the part-filled ones and the element tails of every path's widths.
TEST(AttnKernels, MaxSkipsNanAndMinusInf) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  for (KernelPath path : test::supported_paths()) {
    const AttnKernels& k = attn_kernels(path);
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{9}, std::size_t{16}, std::size_t{22},
                          std::size_t{37}}) {
      std::vector<float> x = test::random_floats(n, 3, -5.0f, 5.0f);
      x[0] = kNan;
      if (n > 2) x[n - 2] = -kInf;
      if (n > 3) x[n / 2] = x[n - 1] = kNan;
      float want = -kInf;
      for (float v : x)
        if (!std::isnan(v)) want = std::max(want, v);
      EXPECT_EQ(k.max_row(x.data(), n), want) << kernel_path_name(path) << " n=" << n;
    }
    EXPECT_EQ(k.max_row(nullptr, 0), -kInf);
  }
}

// Scores with masked (-inf) slots here and there, some lengths around the
// 16-lane boundary and the 871 of a long cache.
std::vector<float> masked_scores(std::size_t n, unsigned seed) {
  auto x = test::random_floats(n, seed, -12.0f, 3.0f);
  for (std::size_t i = 2; i < n; i += 5) x[i] = -kInf;
  return x;
}

TEST(AttnKernels, ExpSumMatchesScalarAndIgnoresTrailingMaskedSlots) {
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{100},
                        std::size_t{871}}) {
    const auto x = masked_scores(n, static_cast<unsigned>(n));
    const float max = scalar_attn_kernels().max_row(x.data(), n);
    auto want = x;
    const double want_sum = scalar_attn_kernels().exp_sum_row(want.data(), n, max);
    double ref = 0.0;
    for (float v : x) ref += std::exp(static_cast<double>(v) - static_cast<double>(max));
    EXPECT_NEAR(want_sum, ref, 1e-6 * ref) << n;
    for (KernelPath path : test::supported_paths()) {
      // Twenty more masked slots past the end change nothing.
      auto got = x;
      got.resize(n + 20, -kInf);
      const double sum = attn_kernels(path).exp_sum_row(got.data(), got.size(), max);
      EXPECT_EQ(std::bit_cast<uint64_t>(sum), std::bit_cast<uint64_t>(want_sum)) << kernel_path_name(path) << " " << n;
      for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << kernel_path_name(path) << " " << i;
      for (std::size_t i = n; i < got.size(); ++i) ASSERT_EQ(got[i], 0.0f);
    }
  }
}

// The f16 rounding is f32_to_f16's, ties and subnormal halves included.
TEST(AttnKernels, ScaleRoundsToF16ExactlyOnEveryPath) {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x7c00; h += 3) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    x.push_back(f);
    x.push_back(std::nextafter(f, kInf));
    x.push_back(f * 1.00048828125f);  // halfway to the next f16, roughly
  }
  for (float v : test::random_floats(1000, 9, 0.0f, 1.0f)) x.push_back(v);
  for (KernelPath path : test::supported_paths()) {
    for (bool round : {false, true}) {
      for (float inv : {1.0f, 0.37f}) {
        auto got = x;
        attn_kernels(path).scale_row(got.data(), got.size(), inv, round);
        for (std::size_t i = 0; i < x.size(); ++i) {
          const float p = x[i] * inv;
          const float want = round ? f16_to_f32(f32_to_f16(p)) : p;
          ASSERT_TRUE(same_bits(got[i], want)) << kernel_path_name(path) << " x=" << x[i];
        }
      }
    }
  }
}

TEST(AttnKernels, F32ToF16RowMatchesScalarConversionForAllKindsOfBits) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (uint32_t b : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7f800000u, 0x477ff000u, 0x33000000u, 0x33000001u})
    x.push_back(std::bit_cast<float>(b));
  for (KernelPath path : test::supported_paths()) {
    std::vector<uint16_t> got(x.size());
    attn_kernels(path).f32_to_f16_row(x.data(), reinterpret_cast<std::byte*>(got.data()), x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(got[i], f32_to_f16(x[i])) << kernel_path_name(path) << " bits " << std::bit_cast<uint32_t>(x[i]);
  }
}

struct Rows {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // what the stored elements read as
  std::size_t stride;
};

Rows make_rows(KvType t, int n, std::size_t hd, unsigned seed) {
  Rows r;
  r.values = test::random_floats(static_cast<std::size_t>(n) * hd, seed);
  r.stride = kv_row_bytes(t, static_cast<int>(hd)) + 6;  // rows not packed, and not aligned
  r.bytes.resize(static_cast<std::size_t>(n) * r.stride);
  for (int i = 0; i < n; ++i) {
    std::byte* at = r.bytes.data() + static_cast<std::size_t>(i) * r.stride;
    float* v = r.values.data() + static_cast<std::size_t>(i) * hd;
    encode_kv_row(t, v, static_cast<int>(hd), at);
    decode_kv_row(t, at, static_cast<int>(hd), v);
  }
  return r;
}

constexpr KvType kAllTypes[] = {KvType::F16, KvType::F32, KvType::Q8_0, KvType::Q4_0, KvType::Fp8};
static_assert(std::size(kAllTypes) == kKvTypeCount, "a new KvType joins the kernel tests");

// Head sizes to try for a type: the float types any size, odd ones
// included; the quantized types the sizes they can store, below one group
// (8, 24: tails on every path; 30: also a tail of single elements after
// 4-wide registers; q4_0 also 6, a head narrower than every register, and
// 18, a 16-wide chunk and a tail of two) and whole groups (64, 96, 128);
// fp8, one scale a row, any size, odd ones included.
std::vector<std::size_t> head_sizes(KvType t, std::vector<std::size_t> float_sizes) {
  if (t == KvType::Q8_0) return {64, 128, 24, 8, 96, 30};
  if (t == KvType::Q4_0) return {64, 128, 24, 8, 96, 30, 6, 18};
  if (t == KvType::Fp8) return {64, 128, 24, 8, 30, 6, 18, 37, 1};
  return float_sizes;
}

// A score is bitwise the same on every path and whatever rows and queries
// share its call; and within 1e-5 of the double dot product (|q|,|k| <= 1).
TEST(AttnKernels, ScoresMatchScalarAndDoNotDependOnTheirCompany) {
  for (KvType type : kAllTypes) {
    for (std::size_t hd : head_sizes(type, {64, 128, 36, 8, 23})) {
      const Rows k = make_rows(type, kAttnMaxRows, hd, 11);
      const auto q = test::random_floats(kAttnMaxQueries * hd, 12);
      const float scale = 0.125f;
      std::vector<float> want(kAttnMaxQueries * kAttnMaxRows);
      const AttnKernels& ref = scalar_attn_kernels();
      ref.rows(type).scores(k.bytes.data(), k.stride, kAttnMaxRows, q.data(), hd, kAttnMaxQueries, hd, scale,
                            want.data(), kAttnMaxRows);
      for (int i = 0; i < kAttnMaxQueries; ++i)
        for (int r = 0; r < kAttnMaxRows; ++r) {
          double dot = 0.0;
          for (std::size_t d = 0; d < hd; ++d)
            dot += static_cast<double>(k.values[static_cast<std::size_t>(r) * hd + d]) * q[i * hd + d];
          EXPECT_NEAR(want[static_cast<std::size_t>(i * kAttnMaxRows + r)], dot * scale, 1e-5);
        }
      for (KernelPath path : test::supported_paths()) {
        const AttnKernels& a = attn_kernels(path);
        const auto fn = a.rows(type).scores;
        for (int nq = 1; nq <= kAttnMaxQueries; ++nq) {
          for (int r0 : {0, 3}) {
            const int nr = kAttnMaxRows - r0 - (nq % 3);
            std::vector<float> got(static_cast<std::size_t>(nq) * static_cast<std::size_t>(nr), NAN);
            const int q0 = kAttnMaxQueries - nq;
            fn(k.bytes.data() + static_cast<std::size_t>(r0) * k.stride, k.stride, nr, q.data() + q0 * hd, hd, nq, hd,
               scale, got.data(), static_cast<std::size_t>(nr));
            for (int i = 0; i < nq; ++i)
              for (int r = 0; r < nr; ++r)
                ASSERT_TRUE(same_bits(got[static_cast<std::size_t>(i * nr + r)],
                                      want[static_cast<std::size_t>((q0 + i) * kAttnMaxRows + r0 + r)]))
                    << kernel_path_name(path) << " " << kv_type_name(type) << " hd " << hd << " nq " << nq << " row " << r;
          }
        }
      }
    }
  }
}

// p.V: bitwise the scalar reference on every path, the f16 rows bitwise their
// f32 conversion, and rows with p == 0 not read (they hold NaN here).
// Head sizes 45 and 7 leave single elements after the registers of every
// path's width (4, 8 and 16 floats).
TEST(AttnKernels, PvMatchesScalarAndSkipsZeroProbabilities) {
  for (std::size_t hd : {std::size_t{64}, std::size_t{128}, std::size_t{36}, std::size_t{200}, std::size_t{45},
                         std::size_t{7}}) {
    constexpr int kRows = 23;
    const Rows v16 = make_rows(KvType::F16, kRows, hd, 21);
    Rows v32 = make_rows(KvType::F32, kRows, hd, 21);
    for (int r = 0; r < kRows; ++r)
      std::memcpy(v32.bytes.data() + static_cast<std::size_t>(r) * v32.stride, &v16.values[static_cast<std::size_t>(r) * hd],
                  hd * 4);
    auto p = test::random_floats(kRows, 22, 0.0f, 0.2f);
    Rows v16_nan = v16;
    for (int r : {0, 5, 22}) {
      p[static_cast<std::size_t>(r)] = 0.0f;
      std::memset(v16_nan.bytes.data() + static_cast<std::size_t>(r) * v16.stride, 0xff, hd * 2);  // NaN
    }
    const auto init = test::random_floats(hd, 23);
    auto want = init;
    scalar_attn_kernels().rows(KvType::F16).pv(p.data(), v16.bytes.data(), v16.stride, kRows, hd, want.data());
    for (std::size_t d = 0; d < hd; ++d) {
      double ref = init[d];
      for (int r = 0; r < kRows; ++r) ref += static_cast<double>(p[static_cast<std::size_t>(r)]) * v16.values[r * hd + d];
      EXPECT_NEAR(want[d], ref, 1e-5);
    }
    for (KernelPath path : test::supported_paths()) {
      const AttnKernels& a = attn_kernels(path);
      auto got16 = init, got32 = init;
      a.rows(KvType::F16).pv(p.data(), v16_nan.bytes.data(), v16.stride, kRows, hd, got16.data());
      a.rows(KvType::F32).pv(p.data(), v32.bytes.data(), v32.stride, kRows, hd, got32.data());
      for (std::size_t d = 0; d < hd; ++d) {
        ASSERT_TRUE(same_bits(got16[d], want[d])) << kernel_path_name(path) << " hd " << hd << " d " << d;
        ASSERT_TRUE(same_bits(got32[d], want[d])) << kernel_path_name(path) << " hd " << hd << " d " << d;
      }
    }
  }
}

// p.V for many queries over the same rows: each query bitwise what pv gives
// it alone, on every path, with queries of every kind mixed in one call:
// some with zero probabilities (their rows hold NaN and must not be read),
// some dense, in every number up to two full tiles of 8 and a remainder
// (so every partial tile, and with it every register span, is taken).
TEST(AttnKernels, PvQueriesMatchPvAloneOnEveryPath) {
  for (KvType type : kAllTypes) {
    for (std::size_t hd : head_sizes(type, {64, 128, 40, 200, 45, 7})) {
      constexpr int kRows = 21;
      const Rows v = make_rows(type, kRows, hd, 31);
      Rows v_nan = v;
      constexpr int kMaxQ = 20;
      constexpr std::size_t kPStride = kRows + 3;
      auto p = test::random_floats(kMaxQ * kPStride, 32, 0.0f, 0.2f);
      for (int i : {2, 7}) {  // queries 2 and 7 see row 4 and the last row with probability 0
        for (int r : {4, kRows - 1}) p[static_cast<std::size_t>(i) * kPStride + static_cast<std::size_t>(r)] = 0.0f;
      }
      // All bits set: NaN in every float layout, a NaN scale in q8_0's and q4_0's.
      for (int r : {4, kRows - 1})
        std::memset(v_nan.bytes.data() + static_cast<std::size_t>(r) * v.stride, 0xff, v.stride);
      const auto init = test::random_floats(kMaxQ * hd, 33);
      const KvRowKernels& ref = scalar_attn_kernels().rows(type);
      for (int nq = 1; nq <= kMaxQ; ++nq) {
        // Queries 2 and 7 read rows that are NaN only where their p is 0; the
        // others are given the clean rows so that all of them share a call.
        std::vector<float> want(init.begin(), init.begin() + static_cast<std::ptrdiff_t>(nq * hd));
        for (int i = 0; i < nq; ++i)
          ref.pv(p.data() + static_cast<std::size_t>(i) * kPStride, v.bytes.data(), v.stride, kRows, hd,
                 want.data() + static_cast<std::size_t>(i) * hd);
        for (KernelPath path : test::supported_paths()) {
          const KvRowKernels& a = attn_kernels(path).rows(type);
          // All queries over the clean rows, then (for the NaN check) the ones
          // with zeros alone over the poisoned rows.
          std::vector<float> got(want.size());
          std::copy(init.begin(), init.begin() + static_cast<std::ptrdiff_t>(nq * hd), got.begin());
          std::vector<float*> outs;
          for (int i = 0; i < nq; ++i) outs.push_back(got.data() + static_cast<std::size_t>(i) * hd);
          a.pv_queries(p.data(), kPStride, nq, v.bytes.data(), v.stride, kRows, hd, outs.data());
          for (std::size_t e = 0; e < want.size(); ++e)
            ASSERT_TRUE(same_bits(got[e], want[e])) << kernel_path_name(path) << " " << kv_type_name(type) << " hd "
                                                    << hd << " nq " << nq << " element " << e;
          if (nq <= 2) continue;
          std::vector<float> alone(init.begin() + static_cast<std::ptrdiff_t>(2 * hd),
                                   init.begin() + static_cast<std::ptrdiff_t>(3 * hd));
          float* alone_out = alone.data();
          a.pv_queries(p.data() + 2 * kPStride, kPStride, 1, v_nan.bytes.data(), v.stride, kRows, hd, &alone_out);
          for (std::size_t d = 0; d < hd; ++d)
            ASSERT_TRUE(same_bits(alone[d], want[2 * hd + d])) << kernel_path_name(path) << " NaN rows, d " << d;
        }
      }
    }
  }
}

// Quantized p.V: bitwise the scalar reference on every path, at every head
// size the type takes, and rows with p == 0 not read (their scale is NaN here;
// every fp8 byte pattern reads as a number, so for fp8 only the first holds).
TEST(AttnKernels, QuantizedPvMatchesScalarAndSkipsZeroProbabilities) {
  for (KvType type : {KvType::Q8_0, KvType::Q4_0, KvType::Fp8}) {
    for (std::size_t hd : head_sizes(type, {})) {
      constexpr int kRows = 23;
      const Rows v = make_rows(type, kRows, hd, 41);
      Rows v_nan = v;
      auto p = test::random_floats(kRows, 42, 0.0f, 0.2f);
      for (int r : {0, 5, 22}) {
        p[static_cast<std::size_t>(r)] = 0.0f;
        std::memset(v_nan.bytes.data() + static_cast<std::size_t>(r) * v.stride, 0xff, v.stride);
      }
      const auto init = test::random_floats(hd, 43);
      auto want = init;
      scalar_attn_kernels().rows(type).pv(p.data(), v.bytes.data(), v.stride, kRows, hd, want.data());
      for (std::size_t d = 0; d < hd; ++d) {
        double ref = init[d];
        for (int r = 0; r < kRows; ++r)
          ref += static_cast<double>(p[static_cast<std::size_t>(r)]) * v.values[r * hd + d];
        EXPECT_NEAR(want[d], ref, 1e-5);
      }
      for (KernelPath path : test::supported_paths()) {
        auto got = init;
        attn_kernels(path).rows(type).pv(p.data(), v_nan.bytes.data(), v.stride, kRows, hd, got.data());
        for (std::size_t d = 0; d < hd; ++d)
          ASSERT_TRUE(same_bits(got[d], want[d]))
              << kernel_path_name(path) << " " << kv_type_name(type) << " hd " << hd << " d " << d;
      }
    }
  }
}

}  // namespace
}  // namespace clm
