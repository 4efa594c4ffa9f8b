#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/quantize.h"

namespace clm {
namespace {

constexpr WeightType kTypes[] = {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0,
                                 WeightType::Q4_0};

bool quantized(WeightType t) { return t == WeightType::Q8_0 || t == WeightType::Q4_0; }

// A random rows x cols matrix stored as type t.
struct TestMatrix {
  TestMatrix(WeightType t, int r, int c, unsigned seed) : rows(r), cols(c), type(t) {
    const auto values = test::random_floats(static_cast<std::size_t>(r) * c, seed);
    stride = row_bytes(t, static_cast<std::size_t>(c));
    bytes.resize(stride * static_cast<std::size_t>(r));
    for (int o = 0; o < r; ++o)
      quantize_row(t, values.data() + static_cast<std::size_t>(o) * c, bytes.data() + o * stride,
                   static_cast<std::size_t>(c));
  }
  WeightMatrix view() const { return {type, bytes.data(), rows, cols, stride}; }
  std::vector<float> row(int o) const {
    std::vector<float> out(static_cast<std::size_t>(cols));
    dequantize_row(type, bytes.data() + static_cast<std::size_t>(o) * stride, out.data(), out.size());
    return out;
  }
  int rows, cols;
  WeightType type;
  std::size_t stride;
  std::vector<std::byte> bytes;
};

// What the kernel multiplies W by: x itself, or its Q8_0 copy for quantized W.
std::vector<float> effective_x(WeightType t, const float* x, int cols) {
  std::vector<float> out(x, x + cols);
  if (!quantized(t)) return out;
  std::vector<std::byte> q(row_bytes(WeightType::Q8_0, static_cast<std::size_t>(cols)));
  quantize_row(WeightType::Q8_0, x, q.data(), out.size());
  dequantize_row(WeightType::Q8_0, q.data(), out.data(), out.size());
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
// cols/8 (or cols/32 block terms) long, plus a few combines. A wrong element,
// block or scale is off by the size of a term, far beyond this.
void expect_close_to_reference(const TestMatrix& m, const std::vector<float>& x, int n, const std::vector<float>& y) {
  const double chain = quantized(m.type) ? m.cols / 32 + 16 : m.cols / 8 + 16;
  for (int r = 0; r < n; ++r) {
    const auto xe = effective_x(m.type, x.data() + static_cast<std::size_t>(r) * m.cols, m.cols);
    for (int o = 0; o < m.rows; ++o) {
      const auto w = m.row(o);
      double ref = 0.0, mag = 0.0;
      for (int i = 0; i < m.cols; ++i) {
        ref += static_cast<double>(w[i]) * xe[i];
        mag += std::fabs(static_cast<double>(w[i]) * xe[i]);
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
      const std::vector<int> col_sizes =
          quantized(t) ? std::vector<int>{32, 64, 96, 4096} : std::vector<int>{1, 32, 67, 96, 4099};
      for (int rows : {1, 3, 17, 65}) {
        for (int cols : col_sizes) {
          const TestMatrix m(t, rows, cols, static_cast<unsigned>(rows * 131 + cols));
          const int n = 3;
          const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, static_cast<unsigned>(cols));
          expect_close_to_reference(m, x, n, run(m, x, n, 2));
        }
      }
    }
  }
}

// The error the Q8_0 staging of x adds, bounded per element by half its step.
TEST(Matmul, QuantizedTypesStayNearTheUnquantizedActivations) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    const int cols = 256;
    const TestMatrix m(t, 9, cols, 77);
    const auto x = test::random_floats(cols, 78);
    const auto y = run(m, x, 1, 1);
    for (int o = 0; o < m.rows; ++o) {
      const auto w = m.row(o);
      double ref = 0.0, bound = 0.0;
      for (int b = 0; b < cols / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
        const double step = amax / 127.0 * (1.0 + 0x1p-10);  // d, with its f16 rounding
        for (int j = 0; j < 32; ++j) {
          ref += static_cast<double>(w[b * 32 + j]) * x[b * 32 + j];
          bound += std::fabs(w[b * 32 + j]) * (0.5 * step + 127.0 * step * 0x1p-11);
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
      for (int cols : {quantized(t) ? 96 : 67, quantized(t) ? 4096 : 4099}) {
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
// (the reduction trees differ) but within twice the reference bound.
TEST(Matmul, SimdPathsAgreeWithScalar) {
  for (WeightType t : kTypes) {
    const int cols = quantized(t) ? 4096 : 4099;
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
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], scalar[i], 2e-4 * (1.0 + std::fabs(scalar[i])))
            << weight_type_name(t) << " " << kernel_path_name(path) << " i=" << i;
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
