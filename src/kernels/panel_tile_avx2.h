// The AVX2 panel tile (vec_dot.h, PanelTileFn): one panel (two ymm of eight
// outputs) times six activation rows, twelve accumulators that each hold
// acc = fma(w[k], x[k], acc) for k = 0 .. n-1 from +0, the canonical order of
// panel_tile_kernel.h. The generic micro tile there keeps its accumulators in
// an array, which GCC leaves in memory with 16 ymm registers: every fma then
// also stores its accumulator, and the store port, not the fma units, sets
// the pace (half the fma peak). Here they are named variables.
//
// A tile of fewer than six rows runs the same loop with the missing rows
// reading the first row again and their results dropped: an output's chain
// never depends on its neighbours, so edge tiles give the same bits.
// Included by vec_dot_avx2.cpp inside its target region, after LoadF16,
// LoadBf16 and panel_tile_kernel.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>

namespace clm {
namespace {

inline constexpr int kAvx2PanelX = 6;

// Rows x[0..5] (n floats each) times the panel at p: out[j][i] is output
// row i of the panel against activation row j.
template <class P>
void panel_1x6(const std::byte* p, const float* const* x, std::size_t n, float (*out)[kPanelRows]) {
  __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l;
  __m256 a3l = a0l, a3h = a0l, a4l = a0l, a4h = a0l, a5l = a0l, a5h = a0l;
  const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
  constexpr std::size_t kStep = kPanelRows * P::kBytes;  // one k of the panel
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* w = p + k * kStep;
    const __m256 wl = P{}(w), wh = P{}(w + 8 * P::kBytes);
    const auto row = [&](const float* xr, __m256& lo, __m256& hi) {
      const __m256 b = _mm256_broadcast_ss(xr + k);
      lo = _mm256_fmadd_ps(wl, b, lo);
      hi = _mm256_fmadd_ps(wh, b, hi);
    };
    row(x0, a0l, a0h);
    row(x1, a1l, a1h);
    row(x2, a2l, a2h);
    row(x3, a3l, a3h);
    row(x4, a4l, a4h);
    row(x5, a5l, a5h);
  }
  const __m256 lo[kAvx2PanelX] = {a0l, a1l, a2l, a3l, a4l, a5l};
  const __m256 hi[kAvx2PanelX] = {a0h, a1h, a2h, a3h, a4h, a5h};
  for (int j = 0; j < kAvx2PanelX; ++j) {
    _mm256_storeu_ps(out[j], lo[j]);
    _mm256_storeu_ps(out[j] + 8, hi[j]);
  }
}

// A PanelTileFn: panel_1x6 over every panel and every six rows; a single
// activation row (decode) takes the generic tile's RP1 panels at once.
template <class P, int RP1>
void panel_tile_avx2(const std::byte* panels, std::size_t panel_bytes, int nw, const float* x, std::size_t x_stride,
                     int nx, std::size_t n, float* y, std::size_t y_stride) {
  if (nx == 1) return panel_tile<Ymm, P, 1, 1, RP1>(panels, panel_bytes, nw, x, x_stride, nx, n, y, y_stride);
  const int np = (nw + kPanelRows - 1) / kPanelRows;
  for (int j = 0; j < nx; j += kAvx2PanelX) {
    const int xn = std::min(kAvx2PanelX, nx - j);
    const float* rows[kAvx2PanelX];
    for (int r = 0; r < kAvx2PanelX; ++r)
      rows[r] = x + static_cast<std::size_t>(j + (r < xn ? r : 0)) * x_stride;
    for (int a = 0; a < np; ++a) {
      float out[kAvx2PanelX][kPanelRows];
      panel_1x6<P>(panels + static_cast<std::size_t>(a) * panel_bytes, rows, n, out);
      const int valid = std::min(kPanelRows, nw - a * kPanelRows);
      for (int r = 0; r < xn; ++r)
        std::copy_n(out[r], valid, y + static_cast<std::size_t>(j + r) * y_stride + a * kPanelRows);
    }
  }
}

}  // namespace
}  // namespace clm
