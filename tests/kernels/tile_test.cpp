// Every register tile a path provides, at every tile shape, against the same
// path's dot on each (weight row, activation row) pair: bitwise equal, which
// is what keeps matmul's outputs independent of how the batch is tiled.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"
#include "kernels/weight_type.h"

namespace clm {
namespace {

struct TypedKernels {
  WeightType type;
  TileFn tile;
  float (*float_dot)(const std::byte*, const float*, std::size_t);
  float (*quant_dot)(const std::byte*, const std::byte*, std::size_t);
};

std::vector<TypedKernels> kernels_of(const VecKernels& k) {
  // F16 and BF16 take the panel tiles instead (panel_tile_test.cpp).
  return {{WeightType::F32, k.tile_f32, k.dot_f32, nullptr},    {WeightType::Q8_0, k.tile_q8_0, nullptr, k.dot_q8_0},
          {WeightType::Q4_0, k.tile_q4_0, nullptr, k.dot_q4_0}, {WeightType::Q4_K, k.tile_q4_k, nullptr, k.dot_q4_k},
          {WeightType::Q5_K, k.tile_q5_k, nullptr, k.dot_q5_k}, {WeightType::Q6_K, k.tile_q6_k, nullptr, k.dot_q6_k}};
}

// Rows of `count` random vectors of n elements stored as type t, `stride` bytes apart.
std::vector<std::byte> random_rows(WeightType t, int count, std::size_t n, std::size_t stride, unsigned seed) {
  const auto values = test::random_floats(static_cast<std::size_t>(count) * n, seed);
  std::vector<std::byte> out(stride * static_cast<std::size_t>(count));
  for (int r = 0; r < count; ++r) quantize_row(t, values.data() + r * n, out.data() + r * stride, n);
  return out;
}

TEST(Tile, EveryShapeIsBitwiseTheDotOfEachPair) {
  int tiles_checked = 0;
  for (KernelPath path : test::supported_paths()) {
    for (const TypedKernels& k : kernels_of(vec_kernels(path))) {
      if (k.tile == nullptr) continue;
      ++tiles_checked;
      const WeightType xt = activation_type(k.type);
      const std::size_t unit = block_elems(k.type);
      for (std::size_t n : {unit, 3 * unit, 16 * unit + (unit == 1 ? 13 : 0), 64 * unit + (unit == 1 ? 7 : unit)}) {
        // Strides with slack, so a tile that assumed packed rows would be caught.
        const std::size_t w_stride = row_bytes(k.type, n) + 6;
        const std::size_t x_stride = row_bytes(xt, n) + 8;
        const auto w = random_rows(k.type, kTileW, n, w_stride, 100 + static_cast<unsigned>(n));
        const auto x = random_rows(xt, kTileX, n, x_stride, 200 + static_cast<unsigned>(n));
        for (int nw = 1; nw <= kTileW; ++nw) {
          for (int nx = 1; nx <= kTileX; ++nx) {
            const std::size_t y_stride = static_cast<std::size_t>(nw) + 3;
            std::vector<float> y(y_stride * kTileX, NAN);
            k.tile(w.data(), w_stride, nw, x.data(), x_stride, nx, n, y.data(), y_stride);
            for (int i = 0; i < nw; ++i) {
              for (int j = 0; j < nx; ++j) {
                const std::byte* wr = w.data() + static_cast<std::size_t>(i) * w_stride;
                const std::byte* xr = x.data() + static_cast<std::size_t>(j) * x_stride;
                const float want = k.float_dot != nullptr ? k.float_dot(wr, reinterpret_cast<const float*>(xr), n)
                                                          : k.quant_dot(wr, xr, n);
                const float got = y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i)];
                EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0)
                    << weight_type_name(k.type) << " " << kernel_path_name(path) << " n=" << n << " tile " << nw
                    << "x" << nx << " at (" << i << "," << j << "): " << got << " vs " << want;
              }
            }
            // Nothing outside the tile is written.
            for (int j = 0; j < kTileX; ++j) {
              for (std::size_t i = 0; i < y_stride; ++i) {
                if (j >= nx || i >= static_cast<std::size_t>(nw)) {
                  EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(j) * y_stride + i]));
                }
              }
            }
          }
        }
      }
    }
  }
  // Which tiles exist is a property of the build; say it, so a run shows what it covered.
  std::printf("tiles checked: %d\n", tiles_checked);
}

// dot4 against four dots of the same path, bitwise, where matmul composes a
// tile from them (a path without the type's tile, vec_dot.h): F32 at sizes
// that leave every tail length, Q8_0 / Q4_0 at odd and even block counts
// (the blocks alternate between two accumulators), activation rows strided.
TEST(Tile, Dot4IsBitwiseFourDotsOnEveryPath) {
  for (KernelPath path : test::supported_paths()) {
    const VecKernels& k = vec_kernels(path);
    for (WeightType t : {WeightType::F32, WeightType::Q8_0, WeightType::Q4_0}) {
      const WeightType xt = activation_type(t);
      const std::size_t unit = block_elems(t);
      for (std::size_t n : {unit, 3 * unit, 5 * unit + (unit == 1 ? 2 : 0), 9 * unit + (unit == 1 ? 7 : 0),
                            64 * unit + (unit == 1 ? 13 : unit)}) {
        const std::size_t x_stride = row_bytes(xt, n) + 4;
        const auto w = random_rows(t, 1, n, row_bytes(t, n), 300 + static_cast<unsigned>(n));
        const auto x = random_rows(xt, 4, n, x_stride, 400 + static_cast<unsigned>(n));
        float four[4], one[4];
        if (t == WeightType::F32) {
          const auto* xf = reinterpret_cast<const float*>(x.data());
          k.dot4_f32(w.data(), xf, x_stride / sizeof(float), n, four);
          for (std::size_t r = 0; r < 4; ++r) one[r] = k.dot_f32(w.data(), xf + r * (x_stride / sizeof(float)), n);
        } else {
          const auto dot = t == WeightType::Q8_0 ? k.dot_q8_0 : k.dot_q4_0;
          (t == WeightType::Q8_0 ? k.dot4_q8_0 : k.dot4_q4_0)(w.data(), x.data(), x_stride, n, four);
          for (std::size_t r = 0; r < 4; ++r) one[r] = dot(w.data(), x.data() + r * x_stride, n);
        }
        for (std::size_t r = 0; r < 4; ++r)
          EXPECT_EQ(std::memcmp(&four[r], &one[r], sizeof one[r]), 0)
              << weight_type_name(t) << " " << kernel_path_name(path) << " n=" << n << " row " << r << ": "
              << four[r] << " vs " << one[r];
      }
    }
  }
}

// Q8_0 weights from other writers may hold -128, which our quantizer never
// makes; with activations at +-127 every integer route of the tiles must still
// be exact, so they still match the dots. The integer sums are exact on every
// path, and here all scales are 1, so the float steps are exact too and every
// path must give the scalar reference's value.
TEST(Tile, Q8_0ExtremeWeightBytesMatchTheDot) {
  const std::size_t n = 5 * kQuantBlockElems;  // two pairs and an odd block
  const std::size_t stride = row_bytes(WeightType::Q8_0, n);
  std::vector<std::byte> w(stride * kTileW), x(stride * kTileX);
  constexpr uint16_t kOne = 0x3C00;  // f16 1.0
  auto fill = [&](std::vector<std::byte>& rows, int count, auto value) {
    for (int r = 0; r < count; ++r)
      for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
        BlockQ8_0 blk{};
        blk.d = kOne;
        for (std::size_t e = 0; e < kQuantBlockElems; ++e) blk.qs[e] = value(r, b, e);
        std::memcpy(rows.data() + static_cast<std::size_t>(r) * stride + b * sizeof blk, &blk, sizeof blk);
      }
  };
  fill(w, kTileW, [](int r, std::size_t b, std::size_t e) {
    const int8_t pattern[] = {-128, 127, -128, -128, 0, -1, 1, -127};
    return (r + b + e) % 3 == 0 ? int8_t{-128} : pattern[(e + static_cast<std::size_t>(r)) % 8];
  });
  fill(x, kTileX, [](int r, std::size_t b, std::size_t e) {
    return (r + b + e) % 2 == 0 ? int8_t{-127} : int8_t{127};
  });
  for (KernelPath path : test::supported_paths()) {
    const VecKernels& k = vec_kernels(path);
    if (k.tile_q8_0 == nullptr) continue;
    std::vector<float> y(static_cast<std::size_t>(kTileW) * kTileX);
    k.tile_q8_0(w.data(), stride, kTileW, x.data(), stride, kTileX, n, y.data(), kTileW);
    for (int i = 0; i < kTileW; ++i)
      for (int j = 0; j < kTileX; ++j) {
        const std::byte* wr = w.data() + static_cast<std::size_t>(i) * stride;
        const std::byte* xr = x.data() + static_cast<std::size_t>(j) * stride;
        EXPECT_EQ(y[static_cast<std::size_t>(j) * kTileW + static_cast<std::size_t>(i)],
                  scalar_vec_kernels().dot_q8_0(wr, xr, n))
            << kernel_path_name(path) << " at (" << i << "," << j << ")";
      }
  }
}

}  // namespace
}  // namespace clm
