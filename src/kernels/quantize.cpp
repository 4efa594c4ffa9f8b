#include "kernels/quantize.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_kquant.h"
#include "util/half.h"

namespace clm {

namespace {

[[noreturn]] void unsupported(WeightType t) {
  // A caller reaching here skipped the load-time type check: stop rather than
  // compute with bytes we cannot interpret.
  std::fprintf(stderr, "clmcache: weight type %u is not a compute type\n", static_cast<unsigned>(t));
  std::abort();
}

void quantize_q8_0(const float* src, std::byte* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* x = src + b * kQuantBlockElems;
    BlockQ8_0 blk{};
    float amax = 0.0f;
    for (std::size_t j = 0; j < kQuantBlockElems; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blk.d = f32_to_f16(d);
    for (std::size_t j = 0; j < kQuantBlockElems; ++j)
      blk.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    std::memcpy(dst + b * sizeof(BlockQ8_0), &blk, sizeof blk);
  }
}

void quantize_q4_0(const float* src, std::byte* dst, std::size_t n) {
  constexpr std::size_t kHalf = kQuantBlockElems / 2;
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* x = src + b * kQuantBlockElems;
    BlockQ4_0 blk{};
    float amax = 0.0f;
    float max = 0.0f;
    for (std::size_t j = 0; j < kQuantBlockElems; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    // The extreme element maps to -8, so the 16 levels are used asymmetrically
    // towards its sign; the opposite extreme may clamp at +7.
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blk.d = f32_to_f16(d);
    for (std::size_t j = 0; j < kHalf; ++j) {
      const int lo = static_cast<int>(x[j] * id + 8.5f);
      const int hi = static_cast<int>(x[j + kHalf] * id + 8.5f);
      const int q_lo = lo < 15 ? lo : 15;
      const int q_hi = hi < 15 ? hi : 15;
      blk.qs[j] = static_cast<uint8_t>(q_lo | (q_hi << 4));
    }
    std::memcpy(dst + b * sizeof(BlockQ4_0), &blk, sizeof blk);
  }
}

void dequantize_q8_0(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const std::byte* blk = src + b * sizeof(BlockQ8_0);
    const float d = f16_to_f32(block_scale_bits(blk));
    const int8_t* q = block_q8_values(blk);
    for (std::size_t j = 0; j < kQuantBlockElems; ++j) dst[b * kQuantBlockElems + j] = d * static_cast<float>(q[j]);
  }
}

void dequantize_q4_0(const std::byte* src, float* dst, std::size_t n) {
  constexpr std::size_t kHalf = kQuantBlockElems / 2;
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const std::byte* blk = src + b * sizeof(BlockQ4_0);
    const float d = f16_to_f32(block_scale_bits(blk));
    const uint8_t* q = block_q4_nibbles(blk);
    float* y = dst + b * kQuantBlockElems;
    for (std::size_t j = 0; j < kHalf; ++j) {
      y[j] = d * static_cast<float>((q[j] & 15) - 8);
      y[j + kHalf] = d * static_cast<float>((q[j] >> 4) - 8);
    }
  }
}

}  // namespace

bool is_compute_type(WeightType t) {
  switch (t) {
    case WeightType::F32:
    case WeightType::F16:
    case WeightType::BF16:
    case WeightType::Q8_0:
    case WeightType::Q4_0:
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K:
      return true;
    default:
      return false;
  }
}

WeightType activation_type(WeightType t) {
  switch (t) {
    case WeightType::Q8_0:
    case WeightType::Q4_0: return WeightType::Q8_0;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K: return WeightType::Q8_K;
    default: return WeightType::F32;
  }
}

std::size_t block_elems(WeightType t) {
  switch (t) {
    case WeightType::Q8_0:
    case WeightType::Q4_0: return kQuantBlockElems;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K:
    case WeightType::Q8_K: return kSuperBlockElems;
    default: return 1;
  }
}

std::size_t row_bytes(WeightType t, std::size_t n) {
  switch (t) {
    case WeightType::F32: return n * 4;
    case WeightType::F16:
    case WeightType::BF16: return n * 2;
    case WeightType::Q8_0: return n / kQuantBlockElems * sizeof(BlockQ8_0);
    case WeightType::Q4_0: return n / kQuantBlockElems * sizeof(BlockQ4_0);
    case WeightType::Q4_K: return n / kSuperBlockElems * sizeof(BlockQ4_K);
    case WeightType::Q5_K: return n / kSuperBlockElems * sizeof(BlockQ5_K);
    case WeightType::Q6_K: return n / kSuperBlockElems * sizeof(BlockQ6_K);
    case WeightType::Q8_K: return n / kSuperBlockElems * sizeof(BlockQ8_K);
    default: unsupported(t);
  }
}

namespace {

// 16-bit float formats, element by element; memcpy because rows need not be
// aligned for uint16_t.
void encode_halves(const float* src, std::byte* dst, std::size_t n, uint16_t (*convert)(float)) {
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t h = convert(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void decode_halves(const std::byte* src, float* dst, std::size_t n, float (*convert)(uint16_t)) {
  for (std::size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = convert(h);
  }
}

}  // namespace

void quantize_row(WeightType t, const float* src, std::byte* dst, std::size_t n) {
  switch (t) {
    case WeightType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case WeightType::F16: encode_halves(src, dst, n, f32_to_f16); return;
    case WeightType::BF16: encode_halves(src, dst, n, f32_to_bf16); return;
    case WeightType::Q8_0: quantize_q8_0(src, dst, n); return;
    case WeightType::Q4_0: quantize_q4_0(src, dst, n); return;
    case WeightType::Q4_K: quantize_q4_k(src, dst, n); return;
    case WeightType::Q5_K: quantize_q5_k(src, dst, n); return;
    case WeightType::Q6_K: quantize_q6_k(src, dst, n); return;
    case WeightType::Q8_K: quantize_q8_k(src, dst, n); return;
    default: unsupported(t);
  }
}

void dequantize_row(WeightType t, const std::byte* src, float* dst, std::size_t n) {
  switch (t) {
    case WeightType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case WeightType::F16: decode_halves(src, dst, n, f16_to_f32); return;
    case WeightType::BF16: decode_halves(src, dst, n, bf16_to_f32); return;
    case WeightType::Q8_0: dequantize_q8_0(src, dst, n); return;
    case WeightType::Q4_0: dequantize_q4_0(src, dst, n); return;
    case WeightType::Q4_K: dequantize_q4_k(src, dst, n); return;
    case WeightType::Q5_K: dequantize_q5_k(src, dst, n); return;
    case WeightType::Q6_K: dequantize_q6_k(src, dst, n); return;
    case WeightType::Q8_K: dequantize_q8_k(src, dst, n); return;
    default: unsupported(t);
  }
}

}  // namespace clm
