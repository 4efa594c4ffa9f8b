// The scores of attn_kernels.h, one K row at a time against a register tile
// of queries, shared by the paths whose registers hold a fraction of the
// reference's sixteen lanes (AVX2: two of 8, NEON: four of 4). Each path
// includes this inside its own target region after defining its lane traits
// V (those of attn_pv_kernel.h, and):
//   V::kScoreTile (queries per register tile),
//   V::fold16(const Reg*) (the 16 / kWidth registers of one score's lanes to
//   their sum by the reference's halving: l + l+8, l + l+4, ...),
// and K row loaders Load with Load::vec and Load::one as attn_pv_kernel.h
// has them, and optionally Load::chunk(row, j, Reg*): elements j..j+15 (j a
// multiple of 16) as 16 / kWidth registers, where one wide load converts
// faster than several narrow ones.
//
// The order is the reference's: lane l of a score is the fma chain over
// whole 16-element chunks in order, the lanes halved to one sum, then the
// tail elements in order, then the product with scale. Queries share a K
// chunk's load and conversion, never an accumulator.
#pragma once

#include <cmath>
#include <cstddef>

namespace clm {
namespace {

inline constexpr std::size_t kScoreLanes = 16;  // the reference's lanes

template <class V, class Load>
inline void load_chunk(const std::byte* row, std::size_t j, typename V::Reg* regs) {
  if constexpr (requires { Load::chunk(row, j, regs); }) {
    Load::chunk(row, j, regs);
  } else {
    for (std::size_t k = 0; k < kScoreLanes / V::kWidth; ++k) regs[k] = Load::vec(row, j + k * V::kWidth);
  }
}

// NQ queries against one row.
template <class V, int NQ, class Load>
void score_row_nq(const std::byte* kr, const float* q, std::size_t q_stride, std::size_t hd, float scale, float* out,
                  std::size_t out_stride) {
  constexpr std::size_t kRegs = kScoreLanes / V::kWidth;
  const std::size_t whole = hd / kScoreLanes * kScoreLanes;
  typename V::Reg acc[NQ][kRegs];
  for (int i = 0; i < NQ; ++i)
    for (std::size_t k = 0; k < kRegs; ++k) acc[i][k] = V::set1(0.0f);
  for (std::size_t j = 0; j < whole; j += kScoreLanes) {
    typename V::Reg kv[kRegs];
    load_chunk<V, Load>(kr, j, kv);
    for (int i = 0; i < NQ; ++i) {
      const float* qi = q + static_cast<std::size_t>(i) * q_stride + j;
      for (std::size_t k = 0; k < kRegs; ++k) acc[i][k] = V::fma(kv[k], V::load(qi + k * V::kWidth), acc[i][k]);
    }
  }
  for (int i = 0; i < NQ; ++i) {
    const float* qi = q + static_cast<std::size_t>(i) * q_stride;
    float s = V::fold16(acc[i]);
    for (std::size_t t = whole; t < hd; ++t) s = std::fma(Load::one(kr, t), qi[t], s);
    out[static_cast<std::size_t>(i) * out_stride] = s * scale;
  }
}

template <class V, class Load>
void scores(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride, int n_q,
            std::size_t hd, float scale, float* out, std::size_t out_stride) {
  constexpr int kTile = V::kScoreTile;
  for (int r = 0; r < n_rows; ++r) {
    const std::byte* kr = k + static_cast<std::size_t>(r) * k_stride;
    float* o = out + static_cast<std::size_t>(r);
    int i = 0;
    for (; i + kTile <= n_q; i += kTile)
      score_row_nq<V, kTile, Load>(kr, q + static_cast<std::size_t>(i) * q_stride, q_stride, hd, scale,
                                   o + static_cast<std::size_t>(i) * out_stride, out_stride);
    for (; i < n_q; ++i)
      score_row_nq<V, 1, Load>(kr, q + static_cast<std::size_t>(i) * q_stride, q_stride, hd, scale,
                               o + static_cast<std::size_t>(i) * out_stride, out_stride);
  }
}

}  // namespace
}  // namespace clm
