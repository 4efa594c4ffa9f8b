// The F16 / BF16 panels: their layout, every path's panel tile against the
// canonical order (one fused multiply-add chain per output from +0) computed
// here from the rows as stored, and matmul from a loaded model's panels
// against matmul packing for the call and against each row alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/float_panels.h"
#include "kernels/matmul.h"
#include "kernels/vec_dot.h"

namespace clm {
namespace {

using test::TestMatrix;

// The canonical order, written out from the row-major matrix.
std::vector<float> chain_reference(const TestMatrix& m, const float* x, std::size_t x_stride, int nx,
                                   std::size_t y_stride) {
  std::vector<float> y(y_stride * static_cast<std::size_t>(nx), NAN);
  for (int o = 0; o < m.rows; ++o) {
    const auto w = m.row(o);
    for (int j = 0; j < nx; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < m.cols; ++k) acc = std::fma(w[static_cast<std::size_t>(k)], x[j * x_stride + k], acc);
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(o)] = acc;
    }
  }
  return y;
}

PanelTileFn panel_fn(const VecKernels& k, WeightType t) { return t == WeightType::F16 ? k.panel_f16 : k.panel_bf16; }

TEST(PanelPack, ElementsSitWhereTheLayoutSaysAndThePaddingIsZero) {
  for (WeightType t : {WeightType::F16, WeightType::BF16}) {
    const TestMatrix m(t, 37, 11, 3);
    const PanelBuffer p = pack_panels(m.view(), 3);
    const std::size_t pb = panel_bytes(t, 11);
    ASSERT_EQ(panels_bytes(t, 37, 11), 3 * pb);
    for (int o = 0; o < 48; ++o) {
      for (int k = 0; k < 11; ++k) {
        uint16_t got, want = 0;
        std::memcpy(&got, p.data() + static_cast<std::size_t>(o / 16) * pb + (k * 16 + o % 16) * 2u, 2);
        if (o < 37) std::memcpy(&want, m.bytes.data() + static_cast<std::size_t>(o) * m.stride + k * 2u, 2);
        EXPECT_EQ(got, want) << weight_type_name(t) << " row " << o << " col " << k;
      }
    }
  }
}

// Rows not a multiple of 16, n not a multiple of any vector width, 1 to 13
// activation rows (more than a register tile holds), strided x and y.
TEST(PanelTile, EveryPathIsBitwiseTheFusedChainOnOddShapes) {
  for (WeightType t : {WeightType::F16, WeightType::BF16}) {
    for (int rows : {1, 15, 16, 17, 50, 130}) {
      for (int n : {1, 7, 16, 33, 161}) {
        const TestMatrix m(t, rows, n, static_cast<unsigned>(rows * 7 + n));
        const PanelBuffer p = pack_panels(m.view());
        const std::size_t x_stride = static_cast<std::size_t>(n) + 3, y_stride = static_cast<std::size_t>(rows) + 2;
        const auto x = test::random_floats(x_stride * 13, static_cast<unsigned>(n));
        for (int nx = 1; nx <= 13; ++nx) {
          const auto want = chain_reference(m, x.data(), x_stride, nx, y_stride);
          for (KernelPath path : test::supported_paths()) {
            std::vector<float> y(y_stride * static_cast<std::size_t>(nx), NAN);
            panel_fn(vec_kernels(path), t)(p.data(), panel_bytes(t, static_cast<std::size_t>(n)), rows, x.data(),
                                           x_stride, nx, static_cast<std::size_t>(n), y.data(), y_stride);
            // Bitwise, and the padding columns of y (NaN in both) untouched.
            EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
                << weight_type_name(t) << " " << kernel_path_name(path) << " rows=" << rows << " n=" << n
                << " nx=" << nx;
          }
        }
      }
    }
  }
}

// A model's matrices carry their panels; matmul from them gives bitwise what
// matmul packing for the call gives, and each row of a batch is bitwise the
// row multiplied alone, on every path and thread count.
TEST(PanelTile, MatmulFromLoadedPanelsIsBatchAndThreadInvariant) {
  for (WeightType t : {WeightType::F16, WeightType::BF16}) {
    const TestMatrix m(t, 83, 100, 9);
    const PanelBuffer p = pack_panels(m.view(), 2);
    WeightMatrix packed = m.view();
    packed.panels = p.data();
    const int n = 13;
    const auto x = test::random_floats(static_cast<std::size_t>(n) * 100, 10);
    for (KernelPath path : test::supported_paths()) {
      test::ScopedKernelPath scoped(path);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> batched(static_cast<std::size_t>(n) * 83), unpacked(batched.size());
        matmul(packed, x.data(), n, batched.data(), pool);
        matmul(m.view(), x.data(), n, unpacked.data(), pool);
        EXPECT_EQ(std::memcmp(batched.data(), unpacked.data(), batched.size() * sizeof(float)), 0)
            << weight_type_name(t) << " " << kernel_path_name(path) << " threads=" << threads;
        for (int r = 0; r < n; ++r) {
          std::vector<float> alone(83);
          matmul(packed, x.data() + static_cast<std::size_t>(r) * 100, 1, alone.data(), pool);
          EXPECT_EQ(std::memcmp(alone.data(), batched.data() + static_cast<std::size_t>(r) * 83, 83 * sizeof(float)),
                    0)
              << weight_type_name(t) << " " << kernel_path_name(path) << " threads=" << threads << " row " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace clm
