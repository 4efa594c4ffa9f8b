// Reference quantizers and exact dequantizers of the k-quant super-blocks
// (Q4_K, Q5_K, Q6_K, and Q8_K for activations). Used through quantize.h;
// n is a multiple of kSuperBlockElems.
#pragma once

#include <cstddef>

namespace clm {

void quantize_q4_k(const float* src, std::byte* dst, std::size_t n);
void quantize_q5_k(const float* src, std::byte* dst, std::size_t n);
void quantize_q6_k(const float* src, std::byte* dst, std::size_t n);
// d = amax / 127, q = round(x / d), plus the 16-element sums.
void quantize_q8_k(const float* src, std::byte* dst, std::size_t n);

void dequantize_q4_k(const std::byte* src, float* dst, std::size_t n);
void dequantize_q5_k(const std::byte* src, float* dst, std::size_t n);
void dequantize_q6_k(const std::byte* src, float* dst, std::size_t n);
void dequantize_q8_k(const std::byte* src, float* dst, std::size_t n);

}  // namespace clm
