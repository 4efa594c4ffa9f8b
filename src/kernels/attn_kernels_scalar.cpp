// The scalar reference of attn_kernels.h: the lane structure the SIMD paths
// use, spelled out element by element with std::fma, so that their results
// can be compared bitwise.
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attn_exp.h"
#include "kernels/attn_kernels.h"
#include "kernels/element_read.h"
#include "kernels/kv_row_codec.h"
#include "util/half.h"

namespace clm {

namespace {

constexpr std::size_t kLanes = 16;

// Element i of a stored K/V row.
inline float load_f32(const std::byte* p, std::size_t i) { return read_f32_element(p + 4 * i); }
inline float load_f16(const std::byte* p, std::size_t i) { return read_f16_element(p + 2 * i); }
inline float load_q8_0(const std::byte* p, std::size_t i) { return read_q8_0_element(p, i); }
inline float load_q4_0(const std::byte* p, std::size_t i) { return read_q4_0_element(p, i); }
inline float load_fp8(const std::byte* p, std::size_t i) { return read_fp8_element(p, i); }

void exp_row(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = attn_exp::exp_ref(x[i]);
}

float max_row(const float* x, std::size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] > m) m = x[i];
  return m;
}

// Sixteen lanes folded by halving: the order every path's reductions share.
template <class T>
T fold16(T* a) {
  for (std::size_t half = kLanes / 2; half >= 1; half /= 2)
    for (std::size_t l = 0; l < half; ++l) a[l] = a[l] + a[l + half];
  return a[0];
}

double exp_sum_row(float* x, std::size_t n, float max) {
  double acc[kLanes] = {};
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = attn_exp::exp_ref(x[i] - max);
    acc[i % kLanes] += static_cast<double>(x[i]);
  }
  return fold16(acc);
}

void scale_row(float* x, std::size_t n, float inv, bool round_f16) {
  for (std::size_t i = 0; i < n; ++i) {
    const float p = x[i] * inv;
    x[i] = round_f16 ? f16_to_f32(f32_to_f16(p)) : p;
  }
}

template <float (*Load)(const std::byte*, std::size_t)>
void scores(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride, int n_q,
            std::size_t hd, float scale, float* out, std::size_t out_stride) {
  const std::size_t whole = hd / kLanes * kLanes;
  for (int r = 0; r < n_rows; ++r) {
    const std::byte* kr = k + static_cast<std::size_t>(r) * k_stride;
    for (int i = 0; i < n_q; ++i) {
      const float* qi = q + static_cast<std::size_t>(i) * q_stride;
      float acc[kLanes] = {};
      for (std::size_t j = 0; j < whole; j += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l) acc[l] = std::fma(Load(kr, j + l), qi[j + l], acc[l]);
      float s = fold16(acc);
      for (std::size_t t = whole; t < hd; ++t) s = std::fma(Load(kr, t), qi[t], s);
      out[static_cast<std::size_t>(i) * out_stride + static_cast<std::size_t>(r)] = s * scale;
    }
  }
}

template <float (*Load)(const std::byte*, std::size_t)>
void pv(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd, float* out) {
  for (int r = 0; r < n_rows; ++r) {
    if (p[r] == 0.0f) continue;
    const std::byte* vr = v + static_cast<std::size_t>(r) * v_stride;
    for (std::size_t d = 0; d < hd; ++d) out[d] = std::fma(p[r], Load(vr, d), out[d]);
  }
}

template <float (*Load)(const std::byte*, std::size_t)>
void pv_queries(const float* p, std::size_t p_stride, int n_q, const std::byte* v, std::size_t v_stride, int n_rows,
                std::size_t hd, float* const* out) {
  for (int i = 0; i < n_q; ++i) pv<Load>(p + static_cast<std::size_t>(i) * p_stride, v, v_stride, n_rows, hd, out[i]);
}

template <float (*Load)(const std::byte*, std::size_t)>
constexpr KvRowKernels row_kernels() {
  return {.scores = scores<Load>, .pv = pv<Load>, .pv_queries = pv_queries<Load>};
}

void f32_to_f16_row(const float* x, std::byte* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace

const AttnKernels& scalar_attn_kernels() {
  static constexpr AttnKernels k{.exp_row = exp_row,
                                 .max_row = max_row,
                                 .exp_sum_row = exp_sum_row,
                                 .scale_row = scale_row,
                                 .rows_by_type = {row_kernels<load_f16>(), row_kernels<load_f32>(),
                                                  row_kernels<load_q8_0>(), row_kernels<load_q4_0>(),
                                                  row_kernels<load_fp8>()},
                                 .f32_to_f16_row = f32_to_f16_row};
  return k;
}

const AttnKernels& attn_kernels(KernelPath p) {
  switch (p) {
#if CLM_ARCH_X86_64
    case KernelPath::Avx2: return avx2_attn_kernels();
    case KernelPath::Avx512:
    case KernelPath::Avx512Vnni: return avx512_attn_kernels();
#endif
#if CLM_ARCH_AARCH64
    case KernelPath::Neon:
    case KernelPath::NeonDot: return neon_attn_kernels();
#endif
    default: break;  // Scalar, and the paths of the other architecture
  }
  return scalar_attn_kernels();
}

}  // namespace clm
