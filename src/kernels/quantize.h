// Conversion between f32 rows and the stored weight types the kernels compute
// with (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), plus Q8_K, the
// activation type of the k-quants. Rows written here are exact GGUF blocks
// and read back in any GGUF reader.
#pragma once

#include <cstddef>

#include "kernels/weight_type.h"

namespace clm {

// True for the weight types matmul accepts; quantize_row and dequantize_row
// accept these and Q8_K.
bool is_compute_type(WeightType t);

// What matmul quantizes each activation row to before multiplying it with
// weights of type t: Q8_0 for Q8_0/Q4_0, Q8_K for the k-quants, F32 (nothing)
// for the float types.
WeightType activation_type(WeightType t);

// Elements per block of t (32 for Q8_0/Q4_0, 256 for the k-quants, else 1). A
// row's length must be a multiple of it.
std::size_t block_elems(WeightType t);

// Bytes of a row of n elements of type t. Precondition: n % block_elems(t) == 0.
std::size_t row_bytes(WeightType t, std::size_t n);

// Writes row_bytes(t, n) bytes. Q8_0: d = amax / 127, q = round(x / d).
// Q4_0: m = the element of largest magnitude (sign kept), d = m / -8,
// q = min(15, trunc(x / d + 8.5)). F16/BF16 round to nearest even.
// Q4_K/Q5_K: per sub-block of 32 a min/max fit refined by least squares, then
// 6-bit scales and mins relative to the block's largest; Q6_K: per sub-block
// of 16 the largest-magnitude element maps to -32, int8 scales relative to the
// largest (+-127). Every k-quant element gets the nearest level its stored
// scales allow. Q8_K: d = amax / 127, q = round(x / d), with 16-element sums.
// Preconditions: is_compute_type(t) or t == Q8_K, n % block_elems(t) == 0.
void quantize_row(WeightType t, const float* src, std::byte* dst, std::size_t n);

// Reads row_bytes(t, n) bytes, writes n floats. Same preconditions.
void dequantize_row(WeightType t, const std::byte* src, float* dst, std::size_t n);

}  // namespace clm
