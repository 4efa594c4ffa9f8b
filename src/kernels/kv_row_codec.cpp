#include "kernels/kv_row_codec.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "util/half.h"

namespace clm {

void quantize_q8_0_row(const float* x, int head_dim, std::byte* row) {
  assert(kv_type_unsupported(KvType::Q8_0, head_dim).empty());
  const std::size_t hd = static_cast<std::size_t>(head_dim);
  const std::size_t group = static_cast<std::size_t>(q8_group_size(head_dim));
  for (std::size_t g0 = 0; g0 < hd; g0 += group) {
    float amax = 0.0f;
    for (std::size_t i = g0; i < g0 + group; ++i) amax = std::max(amax, std::fabs(x[i]));  // std::max keeps amax over a NaN
    const uint16_t d_bits = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(d_bits);
    std::memcpy(row + q8_scale_offset(g0), &d_bits, 2);
    for (std::size_t i = g0; i < g0 + group; ++i) {
      // A zero or non-finite scale stores zeros; a NaN value stores 0; the
      // clamp keeps the cast in range.
      const float r = d > 0.0f && std::isfinite(d) ? std::round(x[i] / d) : 0.0f;
      const float c = std::isnan(r) ? 0.0f : std::fmin(127.0f, std::fmax(-127.0f, r));
      const auto q = static_cast<int8_t>(c);
      std::memcpy(row + q8_value_offset(i), &q, 1);
    }
  }
}

void quantize_q4_0_row(const float* x, int head_dim, std::byte* row) {
  assert(kv_type_unsupported(KvType::Q4_0, head_dim).empty());
  const std::size_t hd = static_cast<std::size_t>(head_dim);
  const std::size_t group = static_cast<std::size_t>(q4_group_size(head_dim));
  for (std::size_t g0 = 0; g0 < hd; g0 += group) {
    float m = 0.0f;
    for (std::size_t i = g0; i < g0 + group; ++i)
      if (std::fabs(x[i]) > std::fabs(m)) m = x[i];  // false for a NaN: m stays a number
    uint16_t d_bits = f32_to_f16(m / -8.0f);
    const float d = f16_to_f32(d_bits);
    const bool usable = d != 0.0f && std::isfinite(d);
    if (!usable) d_bits = 0;  // reads back as zeros, never inf * 0
    std::memcpy(row + q4_scale_offset(g0), &d_bits, 2);
    for (std::size_t i = g0; i < g0 + group; i += 2) {
      unsigned nibbles[2];
      for (std::size_t k = 0; k < 2; ++k) {
        const float r = usable ? std::round(x[i + k] / d) : 0.0f;
        const float c = std::isnan(r) ? 0.0f : std::fmin(7.0f, std::fmax(-8.0f, r));
        nibbles[k] = static_cast<unsigned>(static_cast<int>(c) + 8);
      }
      row[q4_byte_offset(i)] = static_cast<std::byte>(nibbles[0] | nibbles[1] << 4);
    }
  }
}

uint8_t fp8_e4m3_from_f32(float y) {
  if (std::isnan(y)) return 0;
  const float a = std::fmin(std::fabs(y), kFp8Max);
  const uint8_t sign = std::signbit(y) ? 0x80 : 0;
  constexpr float kMinNormal = 0x1p-6f;
  if (a < kMinNormal) {
    // Subnormals are steps of 2^-9: the byte is the step count, and a count
    // of 8 is 0x08, the smallest normal, as it should be.
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f)));
  }
  int e = std::ilogb(a);
  int m = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - e)));  // 8..16: the significand in eighths
  if (m == 16) {
    ++e;
    m = 8;
  }
  return static_cast<uint8_t>(sign | (e + 7) << 3 | (m - 8));
}

void quantize_fp8_row(const float* x, int head_dim, std::byte* row) {
  const std::size_t hd = static_cast<std::size_t>(head_dim);
  float amax = 0.0f;
  for (std::size_t i = 0; i < hd; ++i) amax = std::max(amax, std::fabs(x[i]));  // std::max keeps amax over a NaN
  const bool usable = amax > 0.0f && std::isfinite(amax);
  int e = 0;
  if (usable) {
    e = std::ilogb(amax) - 8;  // amax * 2^-e in [256, 512)
    if (std::ldexp(amax, -e) > kFp8Max) ++e;
    e = std::clamp(e, kFp8MinExp, kFp8MaxExp);
  }
  const auto stored_e = static_cast<int8_t>(e);
  std::memcpy(row, &stored_e, 1);
  for (std::size_t i = 0; i < hd; ++i)
    row[fp8_value_offset(i)] = static_cast<std::byte>(usable ? fp8_e4m3_from_f32(std::ldexp(x[i], -e)) : 0);
}

void encode_kv_row(KvType t, const float* x, int head_dim, std::byte* row) {
  const std::size_t hd = static_cast<std::size_t>(head_dim);
  switch (t) {
    case KvType::F32: std::memcpy(row, x, hd * sizeof(float)); return;
    case KvType::F16:
      for (std::size_t i = 0; i < hd; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
      return;
    case KvType::Q8_0: quantize_q8_0_row(x, head_dim, row); return;
    case KvType::Q4_0: quantize_q4_0_row(x, head_dim, row); return;
    case KvType::Fp8: quantize_fp8_row(x, head_dim, row); return;
  }
}

void decode_kv_row(KvType t, const std::byte* row, int head_dim, float* x) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(head_dim); ++i) x[i] = read_kv_element(t, row, i);
}

}  // namespace clm
