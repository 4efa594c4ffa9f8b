#include "kernels/quantize_kquant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kquant_blocks.h"
#include "util/half.h"

namespace clm {

namespace {

constexpr int kSubBlocks = 8;  // of 32, in Q4_K and Q5_K
constexpr int kSubElems = 32;

// Nearest code in [0, top] of v; NaN and huge values land on an end.
inline int nearest_code(float v, int top) {
  return static_cast<int>(std::fmin(std::fmax(std::round(v), 0.0f), static_cast<float>(top)));
}

// Nearest integer in [-top, top] of v.
inline int nearest_signed(float v, int top) {
  const float t = static_cast<float>(top);
  return static_cast<int>(std::round(std::fmin(std::fmax(v, -t), t)));
}

struct AffineFit {
  float scale = 0.0f;  // x ~ scale * q - min, q in [0, top]
  float min = 0.0f;    // >= 0: the offset is never positive, as the format's unsigned mins need
};

float affine_error(const float* x, int n, int top, AffineFit f) {
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = f.scale > 0.0f ? nearest_code((x[i] + f.min) / f.scale, top) : 0;
    const float e = x[i] - (f.scale * static_cast<float>(q) - f.min);
    err += e * e;
  }
  return err;
}

// Start from the min/max fit, then alternate rounding with a least-squares
// solve of (scale, min) for those codes while the squared error drops. The
// min/max start already bounds the error by half a step; the iterations trade
// a little at the extremes for less error on the bulk.
AffineFit fit_sub_block(const float* x, int n, int top) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  AffineFit best{hi > lo ? (hi - lo) / static_cast<float>(top) : 0.0f, -lo};
  if (best.scale == 0.0f) return best;
  float best_err = affine_error(x, n, top, best);
  for (int iter = 0; iter < 4; ++iter) {
    double sl = 0, sll = 0, sx = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      const double q = nearest_code((x[i] + best.min) / best.scale, top);
      sl += q, sll += q * q, sx += x[i], sxl += x[i] * q;
    }
    const double det = n * sll - sl * sl;
    if (det <= 0) break;
    AffineFit f{static_cast<float>((n * sxl - sl * sx) / det), static_cast<float>(-(sll * sx - sl * sxl) / det)};
    if (f.min < 0.0f) f = {static_cast<float>(sxl / sll), 0.0f};
    if (!(f.scale > 0.0f)) break;
    const float err = affine_error(x, n, top, f);
    if (!(err < best_err)) break;
    best = f, best_err = err;
  }
  return best;
}

// Q4_K and Q5_K share everything but the code width: fits per sub-block, the
// 6-bit scales and mins relative to the largest, then codes for the stored
// (rounded) scales, so each element gets its nearest representable level.
template <int kTop>
void quantize_k_min_block(const float* x, uint16_t& d_bits, uint16_t& dmin_bits, uint8_t* scales, uint8_t* codes) {
  AffineFit fits[kSubBlocks];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    fits[j] = fit_sub_block(x + j * kSubElems, kSubElems, kTop);
    max_scale = std::fmax(max_scale, fits[j].scale);
    max_min = std::fmax(max_min, fits[j].min);
  }
  d_bits = f32_to_f16(max_scale / 63.0f);
  dmin_bits = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  uint8_t sc[kSubBlocks], mn[kSubBlocks];
  for (int j = 0; j < kSubBlocks; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0.0f ? nearest_code(fits[j].scale / d, 63) : 0);
    mn[j] = static_cast<uint8_t>(dmin > 0.0f ? nearest_code(fits[j].min / dmin, 63) : 0);
  }
  pack_k_scales(sc, mn, scales);
  for (int j = 0; j < kSubBlocks; ++j) {
    const float step = d * static_cast<float>(sc[j]);
    const float offset = dmin * static_cast<float>(mn[j]);
    for (int i = 0; i < kSubElems; ++i) {
      const float xi = x[j * kSubElems + i];
      codes[j * kSubElems + i] = static_cast<uint8_t>(step > 0.0f ? nearest_code((xi + offset) / step, kTop) : 0);
    }
  }
}

}  // namespace

void quantize_q4_k(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ4_K blk{};
    uint8_t codes[kSuperBlockElems];
    quantize_k_min_block<15>(src + b * kSuperBlockElems, blk.d, blk.dmin, blk.scales, codes);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        blk.qs[32 * c + l] = static_cast<uint8_t>(codes[64 * c + l] | (codes[64 * c + 32 + l] << 4));
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_q5_k(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ5_K blk{};
    uint8_t codes[kSuperBlockElems];
    quantize_k_min_block<31>(src + b * kSuperBlockElems, blk.d, blk.dmin, blk.scales, codes);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = codes[64 * c + l], hi = codes[64 * c + 32 + l];
        blk.qs[32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        blk.qh[l] = static_cast<uint8_t>(blk.qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// Per sub-block of 16 the element of largest magnitude maps to code -32 (its
// sign kept, as in Q4_0), so the opposite extreme may clamp at +31; the
// sub-block scales are int8 relative to the largest, which maps to +-127.
void quantize_q6_k(const float* src, std::byte* dst, std::size_t n) {
  constexpr int kSubs = 16, kElems = 16;
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    const float* x = src + b * kSuperBlockElems;
    float sub_scale[kSubs];
    float amax_scale = 0.0f;
    for (int j = 0; j < kSubs; ++j) {
      float amax = 0.0f, extreme = 0.0f;
      for (int i = 0; i < kElems; ++i) {
        const float v = x[j * kElems + i];
        if (std::fabs(v) > amax) amax = std::fabs(v), extreme = v;
      }
      sub_scale[j] = extreme / -32.0f;
      amax_scale = std::fmax(amax_scale, std::fabs(sub_scale[j]));
    }
    BlockQ6_K blk{};
    blk.d = f32_to_f16(amax_scale / 127.0f);
    const float d = f16_to_f32(blk.d);
    uint8_t codes[kSuperBlockElems];
    for (int j = 0; j < kSubs; ++j) {
      const int s = d > 0.0f ? nearest_signed(sub_scale[j] / d, 127) : 0;
      blk.scales[j] = static_cast<int8_t>(s);
      const float step = d * static_cast<float>(s);
      for (int i = 0; i < kElems; ++i)
        codes[j * kElems + i] =
            static_cast<uint8_t>(step != 0.0f ? nearest_code(x[j * kElems + i] / step + 32.0f, 63) : 32);
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* c = codes + 128 * h;
      for (int l = 0; l < 32; ++l) {
        blk.ql[64 * h + l] = static_cast<uint8_t>((c[l] & 15) | ((c[l + 64] & 15) << 4));
        blk.ql[64 * h + 32 + l] = static_cast<uint8_t>((c[l + 32] & 15) | ((c[l + 96] & 15) << 4));
        blk.qh[32 * h + l] =
            static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) | ((c[l + 64] >> 4) << 4) | ((c[l + 96] >> 4) << 6));
      }
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// Activation rows are quantized once per matmul, on the decode path too, so
// this stays free of libm calls (baseline x86-64 has no rounding instruction,
// and std::round / std::fmax are calls there): each step below is plain
// arithmetic the compiler vectorizes, and gives exactly what the std:: forms
// would. NaNs compare false, so they are skipped by the maximum and clamp to
// -127, as std::fmax / std::fmin would have them.
inline float abs_max(const float* x, std::size_t n) {
  float amax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
  return amax;
}
// std::round (halves away from zero) of v clamped to [-127, 127]: truncate,
// then step away from zero when the exact remainder is at least a half.
inline int8_t nearest_q8(float v) {
  const float c = std::min(v > -127.0f ? v : -127.0f, 127.0f);
  const int t = static_cast<int>(c);
  const float f = c - static_cast<float>(t);
  return static_cast<int8_t>(t + (f >= 0.5f) - (f <= -0.5f));
}

void quantize_q8_k(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    const float* x = src + b * kSuperBlockElems;
    BlockQ8_K blk{};
    blk.d = abs_max(x, kSuperBlockElems) / 127.0f;
    const float id = blk.d != 0.0f ? 1.0f / blk.d : 0.0f;
    for (std::size_t i = 0; i < kSuperBlockElems; ++i) blk.qs[i] = nearest_q8(x[i] * id);
    for (std::size_t j = 0; j < kSuperBlockElems / 16; ++j) {
      int sum = 0;
      for (std::size_t i = 0; i < 16; ++i) sum += blk.qs[16 * j + i];
      blk.bsums[j] = static_cast<int16_t>(sum);
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// The dequantizers compute (d * sc) * q - dmin * m as the format defines it.
void dequantize_q4_k(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ4_K blk;
    std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
    const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    float* y = dst + b * kSuperBlockElems;
    for (int j = 0; j < kSubBlocks; ++j) {
      const float step = d * static_cast<float>(sc[j]), offset = dmin * static_cast<float>(mn[j]);
      const int shift = 4 * (j & 1);
      for (int l = 0; l < 32; ++l) y[32 * j + l] = step * static_cast<float>((blk.qs[32 * (j / 2) + l] >> shift) & 15) - offset;
    }
  }
}

void dequantize_q5_k(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ5_K blk;
    std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
    const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    float* y = dst + b * kSuperBlockElems;
    for (int j = 0; j < kSubBlocks; ++j) {
      const float step = d * static_cast<float>(sc[j]), offset = dmin * static_cast<float>(mn[j]);
      const int shift = 4 * (j & 1);
      for (int l = 0; l < 32; ++l) {
        const int q = ((blk.qs[32 * (j / 2) + l] >> shift) & 15) | (((blk.qh[l] >> j) & 1) << 4);
        y[32 * j + l] = step * static_cast<float>(q) - offset;
      }
    }
  }
}

void dequantize_q6_k(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ6_K blk;
    std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
    const float d = f16_to_f32(blk.d);
    float* y = dst + b * kSuperBlockElems;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      const int8_t* sc = blk.scales + 8 * h;
      float* yh = y + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        yh[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        yh[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        yh[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        yh[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_q8_k(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    const std::byte* blk = src + b * sizeof(BlockQ8_K);
    const float d = load_field<float>(blk);
    const auto* q = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ8_K, qs));
    for (std::size_t i = 0; i < kSuperBlockElems; ++i) dst[b * kSuperBlockElems + i] = d * static_cast<float>(q[i]);
  }
}

}  // namespace clm
