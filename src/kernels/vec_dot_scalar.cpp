// The scalar reference of vec_dot.h: plain C++, baseline instruction set.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kquant_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"
#include "kernels/element_read.h"
#include "util/half.h"

namespace clm {

namespace {

// The canonical float dot order of the AVX-512 path (float_tile_kernel.h): 16
// lanes, folded as that path folds its register, then the tail in order. Only
// the fused multiply-add there (a separate multiply and add here) differs.
constexpr std::size_t kLanes = 16;

// Element i of a stored row.
inline float load_f32(const std::byte* p, std::size_t i) { return read_f32_element(p + 4 * i); }
inline float load_f16(const std::byte* p, std::size_t i) { return read_f16_element(p + 2 * i); }
inline float load_bf16(const std::byte* p, std::size_t i) { return read_bf16_element(p + 2 * i); }

// Sixteen independent partial sums (lane i % 16): lane l folded with l + 8,
// then l + 4, then l + 2, then l + 1, then the tail added in order. The
// fixed shape keeps the result a function of n alone.
template <class Load>
float lane_dot(const std::byte* w, const float* x, std::size_t n, Load load) {
  float acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] += load(w, i + l) * x[i + l];
  for (std::size_t half = kLanes / 2; half >= 1; half /= 2)
    for (std::size_t l = 0; l < half; ++l) acc[l] += acc[l + half];
  float sum = acc[0];
  for (; i < n; ++i) sum += load(w, i) * x[i];
  return sum;
}

float dot_f32(const std::byte* w, const float* x, std::size_t n) { return lane_dot(w, x, n, load_f32); }

// The canonical order of the F16 and BF16 weights (vec_dot.h, PanelTileFn):
// one fused chain per output from +0, element k of panel row i read where
// the panel layout keeps it. The reference of every path's panel tile.
template <float (*Load)(const std::byte*, std::size_t)>
void panel_float(const std::byte* panels, std::size_t panel_bytes, int nw, const float* x, std::size_t x_stride,
                 int nx, std::size_t n, float* y, std::size_t y_stride) {
  for (int j = 0; j < nx; ++j) {
    const float* xr = x + static_cast<std::size_t>(j) * x_stride;
    for (int i = 0; i < nw; ++i) {
      const std::byte* p = panels + static_cast<std::size_t>(i / kPanelRows) * panel_bytes;
      const std::size_t lane = static_cast<std::size_t>(i % kPanelRows);
      float acc = 0.0f;
      for (std::size_t k = 0; k < n; ++k) acc = std::fma(Load(p, k * kPanelRows + lane), xr[k], acc);
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i)] = acc;
    }
  }
}

// The reference has no tiling: independent dots, four for dot4 and one per
// pair of a tile.
template <float (*Dot)(const std::byte*, const float*, std::size_t)>
void dot4_float(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  for (std::size_t r = 0; r < 4; ++r) out[r] = Dot(w, x + r * x_stride, n);
}
template <float (*Dot)(const std::byte*, const float*, std::size_t)>
void tile_float(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
                std::size_t n, float* y, std::size_t y_stride) {
  for (int j = 0; j < nx; ++j)
    for (int i = 0; i < nw; ++i)
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(i)] =
          Dot(w + static_cast<std::size_t>(i) * w_stride,
              reinterpret_cast<const float*>(x + static_cast<std::size_t>(j) * x_stride), n);
}

// Block integer dots are exact; only the per-block float terms round, summed
// in block order.
float dot_q8_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const std::byte* wb = w + b * sizeof(BlockQ8_0);
    const std::byte* xb = xq + b * sizeof(BlockQ8_0);
    const int8_t* wq = block_q8_values(wb);
    const int8_t* xv = block_q8_values(xb);
    int32_t isum = 0;
    for (std::size_t j = 0; j < kQuantBlockElems; ++j) isum += int32_t{wq[j]} * int32_t{xv[j]};
    const float d = f16_to_f32(block_scale_bits(wb)) * f16_to_f32(block_scale_bits(xb));
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

float dot_q4_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  constexpr std::size_t kHalf = kQuantBlockElems / 2;
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / kQuantBlockElems; ++b) {
    const std::byte* wb = w + b * sizeof(BlockQ4_0);
    const std::byte* xb = xq + b * sizeof(BlockQ8_0);
    const uint8_t* wq = block_q4_nibbles(wb);
    const int8_t* xv = block_q8_values(xb);
    int32_t isum = 0;
    for (std::size_t j = 0; j < kHalf; ++j) {
      isum += ((wq[j] & 15) - 8) * int32_t{xv[j]};
      isum += ((wq[j] >> 4) - 8) * int32_t{xv[j + kHalf]};
    }
    const float d = f16_to_f32(block_scale_bits(wb)) * f16_to_f32(block_scale_bits(xb));
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

// The k-quant references read each element's code the way the format defines
// it and sum plain integer products into the canonical lanes of
// kquant_blocks.h; the SIMD paths reach the same integers by other routes
// (pair sums, activation block sums) and then take the same float steps.
inline const int8_t* q8k_values(const std::byte* xb) {
  return reinterpret_cast<const int8_t*>(xb + offsetof(BlockQ8_K, qs));
}
inline const int16_t* q8k_bsums(const std::byte* xb, int16_t* out) {
  std::memcpy(out, xb + offsetof(BlockQ8_K, bsums), 16 * sizeof(int16_t));
  return out;
}
template <bool kFifthBit, class Block>
float dot_k_min(const std::byte* w, const std::byte* xq, std::size_t n) {
  float code[kKLanes] = {}, mins[kKLanes] = {};
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    Block blk;
    std::memcpy(&blk, w + b * sizeof blk, sizeof blk);
    const std::byte* xb = xq + b * sizeof(BlockQ8_K);
    const int8_t* x = q8k_values(xb);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    int32_t isum[kKLanes] = {}, msum[kKLanes] = {};
    for (int j = 0; j < 8; ++j) {
      // Products first (an element-wise loop the compiler vectorizes), then
      // their sums into the lanes: lane m takes elements 4m .. 4m + 3.
      int32_t prod[32], xsum = 0;
      for (int l = 0; l < 32; ++l) {
        int32_t q = (blk.qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 15;
        if constexpr (kFifthBit) q |= ((blk.qh[l] >> j) & 1) << 4;
        prod[l] = q * x[32 * j + l];
        xsum += x[32 * j + l];
      }
      for (int m = 0; m < kKLanes; ++m)
        isum[m] += sc[j] * ((prod[4 * m] + prod[4 * m + 1]) + (prod[4 * m + 2] + prod[4 * m + 3]));
      msum[j] = mn[j] * xsum;
    }
    const float xd = load_field<float>(xb);
    accumulate_k_lanes(code, f16_to_f32(blk.d) * xd, isum);
    accumulate_k_lanes(mins, -(f16_to_f32(blk.dmin) * xd), msum);
  }
  return k_lanes_total(code, mins);
}

float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) { return dot_k_min<false, BlockQ4_K>(w, xq, n); }
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) { return dot_k_min<true, BlockQ5_K>(w, xq, n); }

float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float code[kKLanes] = {};
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    BlockQ6_K blk;
    std::memcpy(&blk, w + b * sizeof blk, sizeof blk);
    const std::byte* xb = xq + b * sizeof(BlockQ8_K);
    const int8_t* x = q8k_values(xb);
    int16_t bsums[16];
    q8k_bsums(xb, bsums);
    int32_t isum[kKLanes] = {};
    for (int g = 0; g < 8; ++g) {  // elements 32g .. 32g + 31: quarter g % 4 of half g / 4
      const int h = g / 4, quarter = g % 4;
      int32_t prod[32];
      for (int l = 0; l < 32; ++l) {
        const int lo = (blk.ql[64 * h + l + 32 * (quarter & 1)] >> (4 * (quarter >> 1))) & 15;
        const int hi = (blk.qh[32 * h + l] >> (2 * quarter)) & 3;
        prod[l] = blk.scales[2 * g + l / 16] * (lo | (hi << 4)) * x[32 * g + l];
      }
      for (int m = 0; m < kKLanes; ++m) isum[m] += (prod[4 * m] + prod[4 * m + 1]) + (prod[4 * m + 2] + prod[4 * m + 3]);
    }
    for (int m = 0; m < kKLanes; ++m)
      isum[m] -= 32 * (blk.scales[2 * m] * bsums[2 * m] + blk.scales[2 * m + 1] * bsums[2 * m + 1]);
    accumulate_k_lanes(code, f16_to_f32(blk.d) * load_field<float>(xb), isum);
  }
  return k_lanes_total(code);
}

// The reference has no tiling: four independent dots.
template <float (*Dot)(const std::byte*, const std::byte*, std::size_t)>
void dot4(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  for (std::size_t r = 0; r < 4; ++r) out[r] = Dot(w, xq + r * x_stride, n);
}

void f16_to_f32_row(const std::byte* v, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = load_f16(v, i);
}
void quantize_q8_0_row(const float* x, std::byte* dst, std::size_t n) { quantize_row(WeightType::Q8_0, x, dst, n); }

}  // namespace

const VecKernels& scalar_vec_kernels() {
  static constexpr VecKernels k{.dot_f32 = dot_f32,
                                .dot4_f32 = dot4_float<dot_f32>,
                                .dot_q8_0 = dot_q8_0,
                                .dot_q4_0 = dot_q4_0,
                                .dot4_q8_0 = dot4<dot_q8_0>,
                                .dot4_q4_0 = dot4<dot_q4_0>,
                                .dot_q4_k = dot_q4_k,
                                .dot_q5_k = dot_q5_k,
                                .dot_q6_k = dot_q6_k,
                                .dot4_q4_k = dot4<dot_q4_k>,
                                .dot4_q5_k = dot4<dot_q5_k>,
                                .dot4_q6_k = dot4<dot_q6_k>,
                                .tile_f32 = tile_float<dot_f32>,
                                .tile_q8_0 = nullptr,
                                .tile_q4_0 = nullptr,
                                .tile_q4_k = nullptr,
                                .tile_q5_k = nullptr,
                                .tile_q6_k = nullptr,
                                .panel_f16 = panel_float<load_f16>,
                                .panel_bf16 = panel_float<load_bf16>,
                                .f16_to_f32_row = f16_to_f32_row,
                                .quantize_q8_0_row = quantize_q8_0_row};
  return k;
}

const VecKernels& vec_kernels(KernelPath p) {
  switch (p) {
#if CLM_ARCH_X86_64
    case KernelPath::Avx2: return avx2_vec_kernels();
    case KernelPath::Avx512: return avx512_vec_kernels();
    case KernelPath::Avx512Vnni: return avx512_vnni_vec_kernels();
#elif CLM_ARCH_AARCH64
    case KernelPath::Neon: return neon_vec_kernels();
    case KernelPath::NeonDot: return neon_dot_vec_kernels();
#endif
    default: break;  // Scalar, and the paths of the other architecture
  }
  return scalar_vec_kernels();
}

}  // namespace clm
