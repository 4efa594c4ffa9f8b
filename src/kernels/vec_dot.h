// The innermost loops: dot products of one stored row with one activation row,
// one table per KernelPath. Each routine performs a fixed sequence of
// floating-point operations that depends only on n, which is what makes
// matmul and attention batch-invariant. Paths differ from each other in
// rounding only.
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace clm {

// A register tile of a matmul: nw (1..kTileW) weight rows, w_stride bytes
// apart, times nx (1..kTileX) activation rows, x_stride bytes apart (f32 rows
// for F32 weights, quantized rows for the others), n elements each.
// y[j * y_stride + i] = the product of weight row i and activation row j,
// bitwise what the type's dot_* returns for that pair alone: a tile may load
// each weight and activation vector once for many outputs, but every output
// keeps its own accumulators and order, so results never depend on the tiling.
using TileFn = void (*)(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride,
                        int nx, std::size_t n, float* y, std::size_t y_stride);
inline constexpr int kTileW = 8;
inline constexpr int kTileX = 12;

// The panel tile of the F16 and BF16 weights, which matmul multiplies in
// panels (float_panels.h: kPanelRows output rows interleaved along the
// reduction, panel[k][kPanelRows], each panel panel_bytes apart, the last one
// zero-padded): nw (>= 1) output rows starting at the first row of `panels`,
// times nx (>= 1) f32 activation rows x_stride floats apart, n elements each.
// y[j * y_stride + i] = the product of output row i and activation row j in
// the canonical order of these types, the only one any path performs:
//   acc = +0.0f; for k = 0 .. n-1: acc = fma(w[k], x[k], acc)
// one fused multiply-add chain per output (the weights converted to f32
// exactly), so every path gives the same bits, whatever the tiling. Rows of
// y past nw are not written.
using PanelTileFn = void (*)(const std::byte* panels, std::size_t panel_bytes, int nw, const float* x,
                             std::size_t x_stride, int nx, std::size_t n, float* y, std::size_t y_stride);
inline constexpr int kPanelRows = 16;

struct VecKernels {
  // Row of n f32 values (any alignment) times n f32 values.
  float (*dot_f32)(const std::byte* w, const float* x, std::size_t n);
  // Four activation rows (x_stride floats apart) against one weight row, so
  // each weight vector is loaded and converted once for all four. out[r] is
  // bitwise what dot_* returns for row r alone: only the loop order differs.
  void (*dot4_f32)(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out);
  // Row of n/32 Q8_0 or Q4_0 blocks times n/32 Q8_0 blocks of activations.
  // The activation quants must lie in [-127, 127] (what quantize_row makes).
  float (*dot_q8_0)(const std::byte* w, const std::byte* xq, std::size_t n);
  float (*dot_q4_0)(const std::byte* w, const std::byte* xq, std::size_t n);
  // Four activation rows (x_stride bytes apart) against one weight row, so the
  // weight blocks are unpacked once. out[r] is bitwise what dot_* returns for
  // row r alone: only the loop order differs.
  void (*dot4_q8_0)(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out);
  void (*dot4_q4_0)(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out);
  // Row of n/256 Q4_K / Q5_K / Q6_K super-blocks times n/256 Q8_K blocks (quants
  // in [-127, 127]). Each super-block's integer sums are exact and its float
  // steps are those of kquant_blocks.h, so unlike the others these return
  // bitwise the same on every path. dot4_* as above.
  float (*dot_q4_k)(const std::byte* w, const std::byte* xq, std::size_t n);
  float (*dot_q5_k)(const std::byte* w, const std::byte* xq, std::size_t n);
  float (*dot_q6_k)(const std::byte* w, const std::byte* xq, std::size_t n);
  void (*dot4_q4_k)(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out);
  void (*dot4_q5_k)(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out);
  void (*dot4_q6_k)(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out);
  // Tiles per weight type (see TileFn); null where a path has none, and then
  // matmul composes the tile from dot_* and dot4_*.
  TileFn tile_f32, tile_q8_0, tile_q4_0, tile_q4_k, tile_q5_k, tile_q6_k;
  // The F16 and BF16 weights' panel tiles (see PanelTileFn).
  PanelTileFn panel_f16, panel_bf16;
  // dst[i] = the f16 value v[i] as f32. Exact on every path, so a dot over
  // the converted row gives bitwise what the f16 form gives on the raw one:
  // attention converts a K/V row once and reuses it for several queries.
  void (*f16_to_f32_row)(const std::byte* v, float* dst, std::size_t n);
  // The n / 32 Q8_0 blocks of a row of activations, bitwise what
  // quantize_row(WeightType::Q8_0, ...) writes (the scalar table's is that
  // reference): per block amax over |x| ignoring NaN, d = amax / 127,
  // q = x * (1 / d) rounded half away from zero. Inputs with NaN or infinity
  // are outside the promise. Every quantized matmul runs its activations
  // through this, so the scalar form's libm calls were a tenth of prefill.
  void (*quantize_q8_0_row)(const float* x, std::byte* dst, std::size_t n);
};

const VecKernels& vec_kernels(KernelPath p);
inline const VecKernels& active_vec_kernels() { return vec_kernels(active_kernel_path()); }

// One table per translation unit, each compiled for its own instruction set.
const VecKernels& scalar_vec_kernels();
const VecKernels& avx2_vec_kernels();
const VecKernels& avx512_vec_kernels();
// The AVX-512 table with the k-quant dots using VNNI (vpdpwssd) and the Q8_0 /
// Q4_0 tiles using VNNI (vpdpbusd).
const VecKernels& avx512_vnni_vec_kernels();
// AArch64's Advanced SIMD, and that table with the integer dots through SDOT.
const VecKernels& neon_vec_kernels();
const VecKernels& neon_dot_vec_kernels();

}  // namespace clm
