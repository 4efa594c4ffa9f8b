#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/float_panels.h"
#include "kernels/quantize.h"

namespace clm {
namespace {

constexpr WeightType kTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16, WeightType::Q8_0,
                                 WeightType::Q4_0, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};

bool quantized(WeightType t) { return activation_type(t) != WeightType::F32; }
bool k_quant(WeightType t) { return activation_type(t) == WeightType::Q8_K; }

// Column counts: odd ones for the float types, block multiples for the others.
std::vector<int> col_sizes(WeightType t) {
  if (k_quant(t)) return {256, 512, 768, 4096};
  if (quantized(t)) return {32, 64, 96, 4096};
  return {1, 32, 67, 96, 4099};
}

using test::TestMatrix;

// What the kernel multiplies W by: x itself, or its Q8_0 / Q8_K copy for quantized W.
std::vector<float> effective_x(WeightType t, const float* x, int cols) {
  std::vector<float> out(x, x + cols);
  if (!quantized(t)) return out;
  const WeightType act = activation_type(t);
  std::vector<std::byte> q(row_bytes(act, static_cast<std::size_t>(cols)));
  quantize_row(act, x, q.data(), out.size());
  dequantize_row(act, q.data(), out.data(), out.size());
  return out;
}

// |offset| of each element's sub-block for Q4_K/Q5_K (the value of code 0,
// read by decoding the row with every code bit cleared), else zeros. The dot
// rounds the code part and the offset part of a super-block apart, and the
// two may nearly cancel, so their magnitudes bound its error.
std::vector<float> offsets(WeightType t, const std::byte* row, int cols) {
  std::vector<float> out(static_cast<std::size_t>(cols), 0.0f);
  if (t != WeightType::Q4_K && t != WeightType::Q5_K) return out;
  const std::size_t bb = row_bytes(t, 256);
  std::vector<std::byte> copy(row, row + row_bytes(t, static_cast<std::size_t>(cols)));
  for (std::size_t b = 0; b < copy.size() / bb; ++b)
    std::memset(copy.data() + b * bb + 16, 0, bb - 16);  // after d, dmin, scales: qh and qs
  dequantize_row(t, copy.data(), out.data(), out.size());
  for (float& v : out) v = std::fabs(v);
  return out;
}

std::vector<float> run(const TestMatrix& m, const std::vector<float>& x, int n, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<std::size_t>(n) * m.rows, NAN);
  matmul(m.view(), x.data(), n, y.data(), pool);
  return y;
}

// Every output against a double dot of the dequantized weights with the
// values the kernel actually multiplies. Float summation in any fixed order
// of k terms errs by at most ~k ulps of sum |w x|; the lanes make each chain
// cols/8 (or cols/32 block terms) long, plus a few combines. A k-quant
// super-block adds at most four roundings (scale product, int to float, two
// fmas) of its code and offset parts, bounded by sum (|w| + 2 |offset|) |x|.
// A wrong element, block or scale is off by the size of a term, far beyond this.
void expect_close_to_reference(const TestMatrix& m, const std::vector<float>& x, int n, const std::vector<float>& y) {
  const double chain = k_quant(m.type) ? m.cols / 256 * 4 + 16 : quantized(m.type) ? m.cols / 32 + 16 : m.cols / 8 + 16;
  for (int r = 0; r < n; ++r) {
    const auto xe = effective_x(m.type, x.data() + static_cast<std::size_t>(r) * m.cols, m.cols);
    for (int o = 0; o < m.rows; ++o) {
      const auto w = m.row(o);
      const auto off = offsets(m.type, m.bytes.data() + static_cast<std::size_t>(o) * m.stride, m.cols);
      double ref = 0.0, mag = 0.0;
      for (int i = 0; i < m.cols; ++i) {
        ref += static_cast<double>(w[i]) * xe[i];
        mag += (std::fabs(static_cast<double>(w[i])) + 2.0 * off[i]) * std::fabs(xe[i]);
      }
      const double got = y[static_cast<std::size_t>(r) * m.rows + o];
      ASSERT_NEAR(got, ref, chain * 0x1p-23 * mag + 1e-30)
          << weight_type_name(m.type) << " path " << kernel_path_name(active_kernel_path()) << " r=" << r << " o=" << o;
    }
  }
}

TEST(Matmul, EveryTypeAndPathMatchesTheReferenceOnOddShapes) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (WeightType t : kTypes) {
      for (int rows : {1, 3, 17, 65}) {
        for (int cols : col_sizes(t)) {
          const TestMatrix m(t, rows, cols, static_cast<unsigned>(rows * 131 + cols));
          const int n = 3;
          const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, static_cast<unsigned>(cols));
          expect_close_to_reference(m, x, n, run(m, x, n, 2));
        }
      }
    }
  }
}

// The error the Q8_0 / Q8_K staging of x adds, bounded per element by half
// its step (Q8_0 stores d as f16, Q8_K as f32).
TEST(Matmul, QuantizedTypesStayNearTheUnquantizedActivations) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    const int cols = 512;
    const int blk = k_quant(t) ? 256 : 32;
    const double d_rounding = k_quant(t) ? 0x1p-23 : 0x1p-10;
    const TestMatrix m(t, 9, cols, 77);
    const auto x = test::random_floats(cols, 78);
    const auto y = run(m, x, 1, 1);
    for (int o = 0; o < m.rows; ++o) {
      const auto w = m.row(o);
      double ref = 0.0, bound = 0.0;
      for (int b = 0; b < cols / blk; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < blk; ++j) amax = std::fmax(amax, std::fabs(x[b * blk + j]));
        const double step = amax / 127.0 * (1.0 + d_rounding);
        for (int j = 0; j < blk; ++j) {
          ref += static_cast<double>(w[b * blk + j]) * x[b * blk + j];
          bound += std::fabs(w[b * blk + j]) * (0.5 * step + 127.0 * step * d_rounding);
        }
      }
      EXPECT_NEAR(y[o], ref, bound + 1e-4) << weight_type_name(t) << " o=" << o;
    }
  }
}

// The same activation row, alone or at several places in batches of 3 and 64,
// with 1, 2 or 3 threads, gives bitwise the same outputs on every path.
TEST(Matmul, OutputsAreBitwiseIndependentOfBatchAndThreads) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (WeightType t : kTypes) {
      for (int cols : {col_sizes(t)[2], col_sizes(t).back()}) {
        const TestMatrix m(t, 17, cols, 5);
        const auto target = test::random_floats(static_cast<std::size_t>(cols), 6);
        const auto alone = run(m, target, 1, 1);
        for (int n : {3, 64}) {
          for (int at : {0, n / 2 + 1, n - 1}) {
            auto x = test::random_floats(static_cast<std::size_t>(n) * cols, static_cast<unsigned>(n + at));
            std::copy(target.begin(), target.end(), x.begin() + static_cast<std::ptrdiff_t>(at) * cols);
            for (int threads : {1, 2, 3}) {
              const auto y = run(m, x, n, threads);
              EXPECT_EQ(std::memcmp(y.data() + static_cast<std::size_t>(at) * m.rows, alone.data(),
                                    alone.size() * sizeof(float)),
                        0)
                  << weight_type_name(t) << " " << kernel_path_name(path) << " cols=" << cols << " n=" << n
                  << " at=" << at << " threads=" << threads;
            }
          }
        }
      }
    }
  }
}

// Each SIMD path against the scalar reference on the same inputs: not bitwise
// (the reduction trees differ) but within twice the reference bound; the
// k-quant dots share their float steps, and F16 / BF16 their one fused chain
// per output, so for them bitwise.
TEST(Matmul, SimdPathsAgreeWithScalar) {
  for (WeightType t : kTypes) {
    const int cols = col_sizes(t).back();
    const TestMatrix m(t, 33, cols, 11);
    const int n = 4;
    const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, 12);
    std::vector<float> scalar;
    {
      test::ScopedKernelPath scoped(KernelPath::Scalar);
      scalar = run(m, x, n, 3);
    }
    for (KernelPath path : test::supported_paths()) {
      if (path == KernelPath::Scalar) continue;
      test::ScopedKernelPath scoped(path);
      const auto y = run(m, x, n, 3);
      if (k_quant(t) || uses_panels(t)) {
        EXPECT_EQ(std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)), 0)
            << weight_type_name(t) << " " << kernel_path_name(path);
        continue;
      }
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], scalar[i], 2e-4 * (1.0 + std::fabs(scalar[i])))
            << weight_type_name(t) << " " << kernel_path_name(path) << " i=" << i;
    }
  }
}

// Several matrices on the same input in one loop give bitwise what each gives
// alone: same type (one shared loop, tiles of different matrices split
// between threads together) and mixed types (run one by one).
TEST(Matmul, SharedInputProductsEqualSeparateOnes) {
  const std::vector<std::vector<WeightType>> groups = {
      {WeightType::F16, WeightType::F16, WeightType::F16},
      {WeightType::Q8_0, WeightType::Q8_0},
      {WeightType::Q4_K, WeightType::Q4_K, WeightType::Q4_K},
      {WeightType::Q4_K, WeightType::Q6_K, WeightType::Q4_K}};
  const int cols = 512;
  for (const auto& types : groups) {
    std::vector<TestMatrix> ms;
    const int rows[] = {37, 8, 21};
    for (std::size_t i = 0; i < types.size(); ++i) ms.emplace_back(types[i], rows[i], cols, 40 + static_cast<unsigned>(i));
    for (int n : {1, 3, 13}) {
      const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, 50 + static_cast<unsigned>(n));
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<std::vector<float>> ys;
        std::vector<MatmulOutput> outs;
        for (const TestMatrix& m : ms) ys.emplace_back(static_cast<std::size_t>(n) * m.rows, NAN);
        for (std::size_t i = 0; i < ms.size(); ++i) outs.push_back({nullptr, ys[i].data()});
        std::vector<WeightMatrix> views;
        for (const TestMatrix& m : ms) views.push_back(m.view());
        for (std::size_t i = 0; i < ms.size(); ++i) outs[i].w = &views[i];
        matmul_shared_input(outs, x.data(), n, pool);
        for (std::size_t i = 0; i < ms.size(); ++i) {
          const auto alone = run(ms[i], x, n, threads);
          EXPECT_EQ(std::memcmp(ys[i].data(), alone.data(), alone.size() * sizeof(float)), 0)
              << weight_type_name(types[i]) << " product " << i << " n=" << n << " threads=" << threads;
        }
      }
    }
  }
}

TEST(Matmul, ForcingAPathIsObservable) {
  test::ScopedKernelPath scoped(KernelPath::Scalar);
  EXPECT_EQ(active_kernel_path(), KernelPath::Scalar);
  set_kernel_path(best_kernel_path());
  EXPECT_EQ(active_kernel_path(), best_kernel_path());
}

}  // namespace
}  // namespace clm
