// The rotation of rope_shift_paths.h for the paths with fixed-width registers
// and element-by-element tails (AVX2: 8 lanes, NEON: 4). Each path includes
// this inside its own target region after defining its lane traits V:
//   V::Reg, V::kWidth (even),
//   V::load(const float*) (kWidth table entries),
//   V::dup_pairs(const float*) ([t0 t0 t1 t1 ...] from kWidth / 2 entries),
//   V::swap_pairs(Reg) ([x1 x0 x3 x2 ...]),
//   V::neg(Reg), V::neg_first(Reg) (the sign of every lane / of each pair's
//   first lane flipped),
//   V::fma(a, b, c) (a * b + c, fused), V::mul(a, b),
// and two element types E (f32 and f16 rows) with E::kBytes, E::load /
// E::store (kWidth elements as one Reg) and E::load1 / E::store1 (one
// element as a float). Every rotated element is the reference's expression,
// so the paths agree with it bitwise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/rope_shift_paths.h"

namespace clm {
namespace {

// Rows taken through all of a row's chunks together: a chunk's cos/sin
// registers are built once per tile, and the tile's rows stay in L1 whatever
// n_rows is.
inline constexpr int kRopeRowTile = 16;

// One pair (elements ia, ib of a row), the reference's expression.
template <class E>
inline void rotate_pair(const std::byte* s, std::byte* d, std::size_t ia, std::size_t ib, float c, float sn) {
  const float x0 = E::load1(s + ia * E::kBytes);
  const float x1 = E::load1(s + ib * E::kBytes);
  E::store1(d + ia * E::kBytes, std::fma(x0, c, x1 * -sn));
  E::store1(d + ib * E::kBytes, std::fma(x1, c, x0 * sn));
}

// Pairs (2i, 2i+1). Per element: fma(x, C, swapped(x) * S) with C = cos of
// the element's pair and S = -sin on the first element of a pair, +sin on the
// second: lane for lane the reference's two expressions.
template <class V, class E>
void rotate_adjacent(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                     const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t n_rot = static_cast<std::size_t>(params.n_rot);
  const std::size_t whole = n_rot / V::kWidth * V::kWidth;
  for (int r0 = 0; r0 < n_rows; r0 += kRopeRowTile) {
    const int r1 = std::min(n_rows, r0 + kRopeRowTile);
    for (std::size_t j = 0; j < whole; j += V::kWidth) {
      const typename V::Reg c = V::dup_pairs(&table.cos[j / 2]);
      const typename V::Reg s = V::neg_first(V::dup_pairs(&table.sin[j / 2]));
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + j * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const typename V::Reg x = E::load(s_row);
        E::store(d_row, V::fma(x, c, V::mul(V::swap_pairs(x), s)));
      }
    }
    for (int r = r0; r < r1 && whole < n_rot; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t k = whole; k < n_rot; k += 2)
        rotate_pair<E>(src + off, dst + off, k, k + 1, table.cos[k / 2], table.sin[k / 2]);
    }
  }
}

// Pairs (i, i + n_rot/2): the halves are two registers and cos/sin load as is.
template <class V, class E>
void rotate_neox(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                 const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t half = static_cast<std::size_t>(params.n_rot / 2);
  const std::size_t hi = half * E::kBytes;  // from a pair's first element to its second
  const std::size_t whole = half / V::kWidth * V::kWidth;
  for (int r0 = 0; r0 < n_rows; r0 += kRopeRowTile) {
    const int r1 = std::min(n_rows, r0 + kRopeRowTile);
    for (std::size_t i = 0; i < whole; i += V::kWidth) {
      const typename V::Reg c = V::load(&table.cos[i]);
      const typename V::Reg s = V::load(&table.sin[i]);
      const typename V::Reg neg_s = V::neg(s);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + i * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const typename V::Reg x0 = E::load(s_row);
        const typename V::Reg x1 = E::load(s_row + hi);
        E::store(d_row, V::fma(x0, c, V::mul(x1, neg_s)));
        E::store(d_row + hi, V::fma(x1, c, V::mul(x0, s)));
      }
    }
    for (int r = r0; r < r1 && whole < half; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t i = whole; i < half; ++i)
        rotate_pair<E>(src + off, dst + off, i, i + half, table.cos[i], table.sin[i]);
    }
  }
}

// A path's rope_shift_rotate_*: rows of f16 (F16) or f32 (F32) elements.
template <class V, class F16, class F32>
void rope_rotate_rows(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                      const RopeShiftParams& params, const RopeShiftTable& table) {
  const auto rotate = [&]<class E>() {
    const std::size_t row_bytes = stride_elems * E::kBytes;
    if (params.neox)
      rotate_neox<V, E>(src, dst, n_rows, row_bytes, params, table);
    else
      rotate_adjacent<V, E>(src, dst, n_rows, row_bytes, params, table);
  };
  if (type == KvType::F16)
    rotate.template operator()<F16>();
  else
    rotate.template operator()<F32>();
}

}  // namespace
}  // namespace clm
