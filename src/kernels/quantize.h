// Conversion between f32 rows and the stored weight types the kernels compute
// with (F32, F16, BF16, Q8_0, Q4_0). Quantizers are the standard reference
// ones of the GGUF format, so rows written here read back in any GGUF reader.
#pragma once

#include <cstddef>

#include "kernels/weight_type.h"

namespace clm {

// True for the types quantize_row, dequantize_row and matmul accept.
bool is_compute_type(WeightType t);

// Elements per block of t (32 for the quantized types, else 1). A row's length
// must be a multiple of it.
std::size_t block_elems(WeightType t);

// Bytes of a row of n elements of type t. Precondition: n % block_elems(t) == 0.
std::size_t row_bytes(WeightType t, std::size_t n);

// Writes row_bytes(t, n) bytes. Q8_0: d = amax / 127, q = round(x / d).
// Q4_0: m = the element of largest magnitude (sign kept), d = m / -8,
// q = min(15, trunc(x / d + 8.5)). F16/BF16 round to nearest even.
// Preconditions: is_compute_type(t), n % block_elems(t) == 0.
void quantize_row(WeightType t, const float* src, std::byte* dst, std::size_t n);

// Reads row_bytes(t, n) bytes, writes n floats. Same preconditions.
void dequantize_row(WeightType t, const std::byte* src, float* dst, std::size_t n);

}  // namespace clm
