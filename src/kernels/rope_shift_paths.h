// The per-path halves of rope_shift_rows (rope_shift.h). Each rotates the
// elements [0, n_rot) of every row and touches nothing else; rope_shift.cpp
// handles delta 0, copies the elements past n_rot and picks the path. Every
// rotated element is, on every path, the one expression
//   first of a pair:  fma(x0, cos_i, x1 * -sin_i)
//   second of a pair: fma(x1, cos_i, x0 *  sin_i)
// in f32 (f16 read exactly, rounded to nearest even once on the way out), so
// the paths agree bitwise with the scalar reference.
#pragma once

#include <cstddef>

#include "kernels/rope_shift.h"

namespace clm {

// Precondition (checked by the caller): the CPU has the path's instructions.
void rope_shift_rotate_avx2(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table);
void rope_shift_rotate_avx512(const std::byte* src, std::byte* dst, KvType type, int n_rows,
                              std::size_t stride_elems, const RopeShiftParams& params, const RopeShiftTable& table);
// Neon and NeonDot alike: the dot-product instructions do not enter it.
void rope_shift_rotate_neon(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table);

}  // namespace clm
