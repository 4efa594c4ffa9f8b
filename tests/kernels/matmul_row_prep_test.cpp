// A matmul whose input rows are made by a RowPrep (inside its quantization
// loop, or a loop of its own for float weights) gives bitwise what making
// the rows first and multiplying after gives, for every weight type, shared
// inputs of one type or of mixed types, and any thread count; and every row
// is prepared exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"

namespace clm {
namespace {

using test::TestMatrix;

// The row-wise step under test: a residual add then a scaling, in place.
void make_row(float* x, const float* residual, std::size_t cols) {
  for (std::size_t i = 0; i < cols; ++i) x[i] = (x[i] + residual[i]) * 0.75f;
}

TEST(MatmulRowPrep, PreparedRowsGiveWhatPreparingFirstGives) {
  const std::vector<std::vector<WeightType>> groups = {
      {WeightType::F32}, {WeightType::F16, WeightType::F16}, {WeightType::Q8_0, WeightType::Q8_0},
      {WeightType::Q4_0}, {WeightType::Q4_K, WeightType::Q6_K}};
  const int cols = 256;
  for (const auto& types : groups) {
    std::vector<TestMatrix> ms;
    for (std::size_t i = 0; i < types.size(); ++i) ms.emplace_back(types[i], 19 + 8 * static_cast<int>(i), cols, 7 + static_cast<unsigned>(i));
    std::vector<WeightMatrix> views;
    for (const TestMatrix& m : ms) views.push_back(m.view());
    for (int n : {1, 5, 33}) {
      const std::size_t len = static_cast<std::size_t>(n) * cols;
      const auto start = test::random_floats(len, 30 + static_cast<unsigned>(n));
      const auto residual = test::random_floats(len, 60 + static_cast<unsigned>(n));
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        // Preparing first, then the plain matmuls.
        std::vector<float> x_first = start;
        for (int r = 0; r < n; ++r) make_row(x_first.data() + r * cols, residual.data() + r * cols, cols);
        std::vector<std::vector<float>> want, got;
        std::vector<MatmulOutput> outs;
        for (const TestMatrix& m : ms) {
          want.emplace_back(static_cast<std::size_t>(n) * m.rows, NAN);
          got.emplace_back(static_cast<std::size_t>(n) * m.rows, NAN);
        }
        for (std::size_t i = 0; i < ms.size(); ++i) matmul(views[i], x_first.data(), n, want[i].data(), pool);
        for (std::size_t i = 0; i < ms.size(); ++i) outs.push_back({&views[i], got[i].data()});
        // The same step as a RowPrep.
        std::vector<float> x = start;
        std::vector<std::atomic<int>> calls(static_cast<std::size_t>(n));
        auto prepare = [&](std::size_t r) {
          make_row(x.data() + r * cols, residual.data() + r * cols, cols);
          calls[r].fetch_add(1);
        };
        matmul_shared_input(outs, x.data(), n, pool, RowPrep(prepare));
        const std::string where = std::string(weight_type_name(types[0])) + " x" + std::to_string(types.size()) +
                                  " n=" + std::to_string(n) + " threads=" + std::to_string(threads);
        for (int r = 0; r < n; ++r) EXPECT_EQ(calls[static_cast<std::size_t>(r)].load(), 1) << where << " row " << r;
        EXPECT_EQ(std::memcmp(x.data(), x_first.data(), len * sizeof(float)), 0) << where;
        for (std::size_t i = 0; i < ms.size(); ++i)
          EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)), 0)
              << where << " product " << i;
      }
    }
  }
}

// matmul with one matrix and a RowPrep is the same as matmul_shared_input with it.
TEST(MatmulRowPrep, SingleProductTakesThePrepToo) {
  const TestMatrix m(WeightType::Q8_0, 24, 64, 3);
  const int n = 6;
  const auto start = test::random_floats(static_cast<std::size_t>(n) * 64, 4);
  const auto residual = test::random_floats(static_cast<std::size_t>(n) * 64, 5);
  ThreadPool pool(2);
  std::vector<float> x_first = start, want(static_cast<std::size_t>(n) * 24), got(want.size());
  for (int r = 0; r < n; ++r) make_row(x_first.data() + r * 64, residual.data() + r * 64, 64);
  matmul(m.view(), x_first.data(), n, want.data(), pool);
  std::vector<float> x = start;
  auto prepare = [&](std::size_t r) { make_row(x.data() + r * 64, residual.data() + r * 64, 64); };
  matmul(m.view(), x.data(), n, got.data(), pool, RowPrep(prepare));
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace clm
