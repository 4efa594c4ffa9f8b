// The p.V accumulation of attn_kernels.h shared by the SIMD paths. Each path
// includes this inside its own target region after defining its lane traits V:
//   V::Reg, V::kWidth (floats per register), V::kPvTile (queries per register
//   tile of pv_queries), V::kPvAccumulators (accumulator registers a tile may
//   hold), V::load(const float*), V::store(float*, Reg), V::set1(float),
//   V::fma(a, b, c) (a * b + c), V::any_zero(Reg) (a lane equal to 0),
// and K/V row loaders Load with Load::vec(row, index) -> V::Reg (elements
// index.. of the row, index a multiple of V::kWidth) and Load::one(row, index)
// -> float. A loader addresses elements rather than bytes, so a row layout
// with scales between its values (q8_0, q4_0) loads like a plain one.
//
// The order, the only one any routine here performs: every output element
// d of a query is its own chain out[d] = fma(p[r], v_r[d], out[d]) over rows
// r in order, rows with p[r] == 0 left out. It depends on nothing else, so
// the register width and how queries are tiled never change a bit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace clm {
namespace {

// W vectors of out stay in registers across all rows.
template <class V, int W, class Load>
void pv_span(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t d, float* out) {
  constexpr std::size_t kW = V::kWidth;
  typename V::Reg acc[W];
  for (int j = 0; j < W; ++j) acc[j] = V::load(out + j * kW);
  for (int r = 0; r < n_rows; ++r) {
    if (p[r] == 0.0f) continue;
    const typename V::Reg pr = V::set1(p[r]);
    const std::byte* vr = v + static_cast<std::size_t>(r) * v_stride;
    for (int j = 0; j < W; ++j) acc[j] = V::fma(pr, Load::vec(vr, d + j * kW), acc[j]);
  }
  for (int j = 0; j < W; ++j) V::store(out + j * kW, acc[j]);
}

template <class V, class Load>
void pv(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd, float* out) {
  constexpr std::size_t kW = V::kWidth;
  std::size_t d = 0;
  for (; d + 4 * kW <= hd; d += 4 * kW) pv_span<V, 4, Load>(p, v, v_stride, n_rows, d, out + d);
  for (; d + kW <= hd; d += kW) pv_span<V, 1, Load>(p, v, v_stride, n_rows, d, out + d);
  for (; d < hd; ++d)
    for (int r = 0; r < n_rows; ++r)
      if (p[r] != 0.0f) out[d] = std::fma(p[r], Load::one(v + static_cast<std::size_t>(r) * v_stride, d), out[d]);
}

// True when every p[r], r < n, is nonzero: such a query's pv visits every
// row, so it can share a register tile with others without any skipping.
template <class V>
bool all_nonzero(const float* p, int n) {
  constexpr int kW = static_cast<int>(V::kWidth);
  int r = 0;
  for (; r + kW <= n; r += kW)
    if (V::any_zero(V::load(p + r))) return false;
  for (; r < n; ++r)
    if (p[r] == 0.0f) return false;
  return true;
}

// NQ queries' W output vectors stay in registers over all rows; each V vector
// is loaded and converted once for the tile. Every element gets its own
// query's fma chain, row by row, as in pv.
template <class V, int NQ, int W, class Load>
void pv_tile(const float* const* p, const std::byte* v, std::size_t v_stride, int n_rows, float* const* out,
             std::size_t d) {
  constexpr std::size_t kW = V::kWidth;
  typename V::Reg acc[NQ][W];
  for (int i = 0; i < NQ; ++i)
    for (int j = 0; j < W; ++j) acc[i][j] = V::load(out[i] + d + j * kW);
  for (int r = 0; r < n_rows; ++r) {
    typename V::Reg pr[NQ];
    for (int i = 0; i < NQ; ++i) pr[i] = V::set1(p[i][r]);
    const std::byte* vr = v + static_cast<std::size_t>(r) * v_stride;
    for (int j = 0; j < W; ++j) {
      const typename V::Reg vv = Load::vec(vr, d + j * kW);
      for (int i = 0; i < NQ; ++i) acc[i][j] = V::fma(pr[i], vv, acc[i][j]);
    }
  }
  for (int i = 0; i < NQ; ++i)
    for (int j = 0; j < W; ++j) V::store(out[i] + d + j * kW, acc[i][j]);
}

// NQ queries over all of hd: register tiles of kSpan vectors per query, as
// many as V::kPvAccumulators allows (at most 4: 64 dims on AVX-512), then
// single vectors, then single elements.
template <class V, int NQ, class Load>
void pv_dense(const float* const* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd,
              float* const* out) {
  constexpr std::size_t kW = V::kWidth;
  constexpr int kSpan = std::clamp(V::kPvAccumulators / NQ, 1, 4);
  std::size_t d = 0;
  for (; d + kSpan * kW <= hd; d += kSpan * kW) pv_tile<V, NQ, kSpan, Load>(p, v, v_stride, n_rows, out, d);
  for (; d + kW <= hd; d += kW) pv_tile<V, NQ, 1, Load>(p, v, v_stride, n_rows, out, d);
  for (; d < hd; ++d)
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < n_rows; ++r)
        out[i][d] = std::fma(p[i][r], Load::one(v + static_cast<std::size_t>(r) * v_stride, d), out[i][d]);
}

// The last, partial tile of pv_queries: n (< V::kPvTile) queries.
template <class V, class Load, int NQ = V::kPvTile - 1>
void pv_dense_rest(int n, const float* const* p, const std::byte* v, std::size_t v_stride, int n_rows,
                   std::size_t hd, float* const* out) {
  if constexpr (NQ >= 1) {
    if (n == NQ) return pv_dense<V, NQ, Load>(p, v, v_stride, n_rows, hd, out);
    pv_dense_rest<V, Load, NQ - 1>(n, p, v, v_stride, n_rows, hd, out);
  }
}

template <class V, class Load>
void pv_queries(const float* p, std::size_t p_stride, int n_q, const std::byte* v, std::size_t v_stride, int n_rows,
                std::size_t hd, float* const* out) {
  constexpr int kTile = V::kPvTile;
  const float* tp[kTile];
  float* to[kTile];
  int n = 0;
  for (int i = 0; i < n_q; ++i) {
    const float* pi = p + static_cast<std::size_t>(i) * p_stride;
    if (!all_nonzero<V>(pi, n_rows)) {  // skips rows: alone, through pv
      pv<V, Load>(pi, v, v_stride, n_rows, hd, out[i]);
      continue;
    }
    tp[n] = pi;
    to[n++] = out[i];
    if (n == kTile) {
      pv_dense<V, kTile, Load>(tp, v, v_stride, n_rows, hd, to);
      n = 0;
    }
  }
  pv_dense_rest<V, Load>(n, tp, v, v_stride, n_rows, hd, to);
}

}  // namespace
}  // namespace clm
