// Conversion between f32 values and one stored KV row (kv_type.h), for
// every type. Storing is one scalar routine per type, used by every kernel
// path, so the bytes of a row depend only on its values and its type, never
// on the CPU's SIMD family: a cache hit holds what a cold run writes.
// Reading a q8_0 or q4_0 element is exact in f32 (an f16 scale times an int8
// fits f32's 24-bit significand), so any path that dequantizes gets the same
// floats as decode_kv_row.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/element_read.h"
#include "kernels/kv_type.h"

namespace clm {

// Byte offset of element i's int8 in a q8_0 row, and of its group's scale.
// One formula for both group shapes: a head narrower than kQ8GroupSize has
// its single group at offset 0.
inline std::size_t q8_value_offset(std::size_t i) {
  return (i / kQ8GroupSize) * (kQ8GroupSize + 2) + 2 + i % kQ8GroupSize;
}
inline std::size_t q8_scale_offset(std::size_t i) { return (i / kQ8GroupSize) * (kQ8GroupSize + 2); }

inline float read_q8_0_element(const std::byte* row, std::size_t i) {
  int8_t q;
  std::memcpy(&q, row + q8_value_offset(i), 1);
  return read_f16_element(row + q8_scale_offset(i)) * static_cast<float>(q);
}

// A q4_0 group is its f16 scale d, then its values two to a byte: element
// 2j in the low nibble of byte j, 2j + 1 in the high one, each stored as
// q + 8 (0..15). Pairs of neighbours rather than llama.cpp's block_q4_0
// order (j with j + 16) so that any even run of elements is a run of whole
// bytes, which a one-group head narrower than 32 also needs; these rows never
// leave this cache as ggml blocks. Byte offset of element i's byte, and of
// its group's scale; one formula for both group shapes, as q8_0's.
inline std::size_t q4_byte_offset(std::size_t i) {
  return (i / kQ4GroupSize) * (kQ4GroupSize / 2 + 2) + 2 + (i % kQ4GroupSize) / 2;
}
inline std::size_t q4_scale_offset(std::size_t i) { return (i / kQ4GroupSize) * (kQ4GroupSize / 2 + 2); }

// q (-8..7) of element i.
inline int q4_value(const std::byte* row, std::size_t i) {
  const auto b = static_cast<unsigned>(row[q4_byte_offset(i)]);
  return static_cast<int>(i % 2 == 0 ? b & 0x0Fu : b >> 4) - 8;
}

inline float read_q4_0_element(const std::byte* row, std::size_t i) {
  return read_f16_element(row + q4_scale_offset(i)) * static_cast<float>(q4_value(row, i));
}

// An fp8 row is its scale's exponent e (one int8), then head_dim E4M3 bytes
// (sign, 4 exponent bits biased by 7, 3 mantissa bits). The encoder writes
// e in [kFp8MinExp, kFp8MaxExp], where every value * 2^e is a normal f32, so
// reading is exact; a reader clamps e to that range, so even damaged bytes
// read the same on every path. The encoder never writes 0x7F or 0xFF (E4M3's
// NaN); every path reads them as +-480, the pattern's value read as if it
// were a number.
inline constexpr int kFp8MinExp = -110;
inline constexpr int kFp8MaxExp = 119;
inline constexpr float kFp8Max = 448.0f;  // the largest E4M3 value, 0x7E
inline std::size_t fp8_value_offset(std::size_t i) { return 1 + i; }

// 2^e of the row's scale.
inline float fp8_row_scale(const std::byte* row) {
  int8_t e;
  std::memcpy(&e, row, 1);
  const int clamped = e < kFp8MinExp ? kFp8MinExp : e > kFp8MaxExp ? kFp8MaxExp : e;
  uint32_t bits = static_cast<uint32_t>(clamped + 127) << 23;  // normal: clamped + 127 is in 17..246
  float scale;
  std::memcpy(&scale, &bits, 4);
  return scale;
}

// The value of each E4M3 byte: (8 + m) * 2^(E - 10), or m * 2^-9 for E = 0.
// Products of small integers and powers of two, so exact in f32.
inline constexpr std::array<float, 256> kFp8Values = [] {
  std::array<float, 256> v{};
  for (int b = 0; b < 256; ++b) {
    const int exponent = (b >> 3) & 15, mantissa = b & 7;
    float x = static_cast<float>(exponent == 0 ? mantissa : 8 + mantissa);
    for (int k = 0; k < (exponent == 0 ? 9 : 10 - exponent); ++k) x *= 0.5f;
    for (int k = 0; k < exponent - 10; ++k) x *= 2.0f;
    v[static_cast<std::size_t>(b)] = b & 0x80 ? -x : x;
  }
  return v;
}();

inline float read_fp8_element(const std::byte* row, std::size_t i) {
  return kFp8Values[static_cast<std::size_t>(row[fp8_value_offset(i)])] * fp8_row_scale(row);
}

// Element i of a row of type t, as f32.
inline float read_kv_element(KvType t, const std::byte* row, std::size_t i) {
  switch (t) {
    case KvType::F16: return read_f16_element(row + 2 * i);
    case KvType::F32: return read_f32_element(row + 4 * i);
    case KvType::Q8_0: return read_q8_0_element(row, i);
    case KvType::Q4_0: return read_q4_0_element(row, i);
    case KvType::Fp8: return read_fp8_element(row, i);
  }
  return 0.0f;
}

// The q8_0 rounding, per group: d = max|x| / 127 rounded to f16, then each
// q = round(x / d) (halves away from zero), clamped to [-127, 127] (the f16
// rounding of d may make |x / d| pass 127 by a hair). Quantizing with the
// stored d rather than the unrounded one makes d * q the nearest grid point
// to x of the grid it is read on. A group of zeros, or a d that rounds to
// 0, stores d = 0 and q = 0; a NaN value stores q = 0.
// Precondition: kv_type_unsupported(Q8_0, head_dim) is empty.
void quantize_q8_0_row(const float* x, int head_dim, std::byte* row);

// The q4_0 rounding, per group, llama.cpp's q4_0 convention: m is the value
// of largest magnitude (the first of equals; NaN never), d = m / -8 rounded
// to f16 (so d may be negative, and m reads back as d * -8), then each
// q = round(x / d) (halves away from zero) clamped to [-8, 7]: the values of
// m's sign get 8 steps, the others 7 and are clamped (a value of -m reads
// back as 7d, one step short). As in q8_0 the stored d is the one divided
// by. A group of zeros, or a d that rounds to 0 or is not finite (an
// infinite value, or one past f16's range), stores d = 0 and q = 0, so it
// reads back as zeros; a NaN value stores q = 0.
// Precondition: kv_type_unsupported(Q4_0, head_dim) is empty.
void quantize_q4_0_row(const float* x, int head_dim, std::byte* row);

// The fp8 rounding: e is the smallest exponent with max|x| * 2^-e <= 448
// (clamped to [kFp8MinExp, kFp8MaxExp]), so the largest value lands in
// E4M3's top binade; each x * 2^-e is then rounded to the nearest E4M3
// value, ties to even, saturating at +-448 (only a value past 448 * 2^119
// needs it). A row of zeros, or one holding an infinity, stores e = 0 and
// zeros; a NaN value stores 0.
void quantize_fp8_row(const float* x, int head_dim, std::byte* row);
// The E4M3 byte nearest to y (ties to even), saturating at +-448; NaN gives 0.
uint8_t fp8_e4m3_from_f32(float y);

// x (head_dim f32) stored as a row of type t (f16: nearest even).
void encode_kv_row(KvType t, const float* x, int head_dim, std::byte* row);
// The row of type t as head_dim f32 values.
void decode_kv_row(KvType t, const std::byte* row, int head_dim, float* x);

}  // namespace clm
