// Batches of many rows multiply f16 / bf16 weights widened to f32 block by
// block (matmul.cpp); a single row uses the stored weights as they are. The
// two must agree bit for bit, whatever the block boundaries, the tail of a
// row that does not fill a vector, or how the threads split the rows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"

namespace clm {
namespace {

struct HalfMatrix {
  HalfMatrix(WeightType t, int r, int c) : type(t), rows(r), cols(c) {
    const auto values = test::random_floats(static_cast<std::size_t>(r) * c, static_cast<unsigned>(r * 7 + c));
    stride = row_bytes(t, static_cast<std::size_t>(c));
    bytes.resize(stride * static_cast<std::size_t>(r));
    for (int o = 0; o < r; ++o)
      quantize_row(t, values.data() + static_cast<std::size_t>(o) * c, bytes.data() + o * stride,
                   static_cast<std::size_t>(c));
  }
  WeightMatrix view() const { return {type, bytes.data(), rows, cols, stride}; }
  WeightType type;
  int rows, cols;
  std::size_t stride;
  std::vector<std::byte> bytes;
};

std::vector<float> multiply(const HalfMatrix& m, const float* x, int n, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<std::size_t>(n) * m.rows);
  matmul(m.view(), x, n, y.data(), pool);
  return y;
}

TEST(MatmulWidened, BatchOutputsAreBitwiseThoseOfEachRowAlone) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (WeightType t : {WeightType::F16, WeightType::BF16}) {
      // 35 columns: one vector and a tail; 1030: 67 rows make two weight
      // blocks of unequal size; 4099: one 8-row tile per block, nine blocks.
      for (int cols : {35, 1030, 4099}) {
        const HalfMatrix m(t, 67, cols);
        const int n = 37;
        const auto x = test::random_floats(static_cast<std::size_t>(n) * cols, static_cast<unsigned>(cols + 1));
        std::vector<float> alone(static_cast<std::size_t>(n) * m.rows);
        for (int r = 0; r < n; ++r) {
          const auto y = multiply(m, x.data() + static_cast<std::size_t>(r) * cols, 1, 1);
          std::copy(y.begin(), y.end(), alone.begin() + static_cast<std::ptrdiff_t>(r) * m.rows);
        }
        // 23 rows stay below the widening threshold, 24 and 37 reach it.
        for (int batch : {23, 24, 37}) {
          for (int threads : {1, 2, 3}) {
            const auto y = multiply(m, x.data(), batch, threads);
            EXPECT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0)
                << weight_type_name(t) << " " << kernel_path_name(path) << " cols=" << cols << " batch=" << batch
                << " threads=" << threads;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace clm
