// RoPE re-rotation of stored K (DESIGN.md: "RoPE re-alignment is a per-block
// position delta applied by one pure kernel"). K is cached after RoPE at the
// position its token had when it was written; rotating every pair once more
// by delta * theta_i moves it to position + delta, which is how a cached span
// is reused at another position. V has no position and is copied as is.
//
// A table holds cos/sin of delta * theta_i for one delta and one model's
// RoPE (layout, n_rot, freq_base, llama-3 frequency factors); the row kernel
// then rotates token rows of head_dim elements, f16 or f32, converting to
// f32, rotating, and rounding back once. Every SIMD path gives bitwise the
// result of the scalar reference (NaN payloads aside), and a shift by 0
// gives back its input bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kv_geometry.h"

namespace clm {

struct RopeShiftParams {
  int head_dim = 0;
  int n_rot = 0;  // rotated dimensions per head, even, <= head_dim
  float freq_base = 10000.0f;
  const float* freq_factors = nullptr;  // n_rot / 2 entries, or null
  bool neox = false;                    // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
};

// cos/sin of delta * theta_i for pair i < n_rot / 2, where theta_i =
// freq_base^(-2i / n_rot) / factor_i. Angles are taken in double so that the
// only rounding is that of the result to float.
struct RopeShiftTable {
  int32_t delta = 0;
  std::vector<float> cos;  // [n_rot / 2]
  std::vector<float> sin;  // [n_rot / 2]
};
RopeShiftTable make_rope_shift_table(const RopeShiftParams& params, int32_t delta);

// dst row t = src row t with every rotated pair (a, b) turned into
// (a cos - b sin, a sin + b cos) and the elements >= n_rot copied, for
// n_rows rows of params.head_dim elements of `type` (f16 or f32: a quantized
// row has no elements to rotate; kv_row_move.h goes through f32), rows `stride_elems`
// apart in both. src == dst is allowed (in place); other overlap is not.
// In f32, exactly (fma(a, cos, b * -sin), fma(b, cos, a * sin)); f16 is read
// exactly and the result rounded to nearest even once. A table of delta 0
// copies the rows instead: rotating by (1, 0) would turn a -0 whose partner
// is negative into +0, and an element whose partner is infinite into NaN
// (inf * 0). No allocation. Precondition: table made from params.
void rope_shift_rows(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                     const RopeShiftParams& params, const RopeShiftTable& table);

// The scalar reference of rope_shift_rows, for tests.
void rope_shift_rows_scalar(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table);

}  // namespace clm
