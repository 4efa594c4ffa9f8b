// The inner loops of attention over a paged KV cache, one table per
// KernelPath: scores of K rows against queries, the softmax steps (max, exp
// and its sum, normalisation with f16 rounding), and the p.V accumulation,
// the routines that read K/V rows once per KvType.
//
// Each routine's floating-point operations are fixed lane by lane below and
// are the same on every path; attn_kernels_scalar.cpp states them in plain
// C++. So the paths agree bitwise (attn_kernels_test checks it). What a
// result depends on is its own row and query only: never
// on how many rows or queries one call takes, which is what keeps grouped
// attention bitwise equal to one query at a time.
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"
#include "kernels/kv_type.h"

namespace clm {

// Most K rows / queries one scores call takes. 32 queries: a cascade's
// decode rows score a shared K chunk in one call, so the chunk is loaded (and
// converted from f16) once per register tile of queries rather than per query.
inline constexpr int kAttnMaxRows = 16;
inline constexpr int kAttnMaxQueries = 32;

// The paths' tables list a KvRowKernels per type in this order.
static_assert(static_cast<int>(KvType::F16) == 0 && static_cast<int>(KvType::F32) == 1 &&
              static_cast<int>(KvType::Q8_0) == 2 && static_cast<int>(KvType::Q4_0) == 3 &&
              static_cast<int>(KvType::Fp8) == 4 && kKvTypeCount == 5);

struct KvRowKernels {
  // out[i * out_stride + r] = scale * (K row r . query i) for r < n_rows
  // (<= kAttnMaxRows), i < n_q (<= kAttnMaxQueries); row r at k + r * k_stride
  // bytes, query i at q + i * q_stride floats, hd elements each. Per score: 16
  // lanes a_l = fma(k[16j+l], q[16j+l], a_l) over whole 16-element chunks j in
  // order from 0, halved to one sum as exp_sum_row's lanes are, then the tail elements t in order
  // as s = fma(k[t], q[t], s), then s * scale.
  void (*scores)(const std::byte* k, std::size_t k_stride, int n_rows, const float* q, std::size_t q_stride, int n_q,
                 std::size_t hd, float scale, float* out, std::size_t out_stride);
  // For rows r in order with p[r] != 0: out[d] = fma(p[r], v_r[d], out[d]) for
  // every d < hd; row r at v + r * v_stride bytes. Rows whose p is 0 are not
  // read, so masked slots may hold anything.
  void (*pv)(const float* p, const std::byte* v, std::size_t v_stride, int n_rows, std::size_t hd, float* out);
  // pv for n_q queries over the same V rows: query i's probabilities at
  // p + i * p_stride, its output at out[i]; each query's result is bitwise
  // what pv gives for it alone (same fma chain per element). The SIMD paths
  // convert a V vector once for a register tile of queries.
  void (*pv_queries)(const float* p, std::size_t p_stride, int n_q, const std::byte* v, std::size_t v_stride,
                     int n_rows, std::size_t hd, float* const* out);
};

struct AttnKernels {
  // y[i] = exp(x[i]) by attn_exp.h's algorithm. y may be x.
  void (*exp_row)(const float* x, float* y, std::size_t n);
  // The largest x[i] that is not NaN; -inf for none (or n == 0).
  float (*max_row)(const float* x, std::size_t n);
  // x[i] = exp(x[i] - max), returning their sum in double: slot i goes to
  // lane i % 16, lanes are combined by halving (l + l+8, then l + l+4, ...).
  // An x[i] of -inf contributes exactly 0 wherever it lies.
  double (*exp_sum_row)(float* x, std::size_t n, float max);
  // x[i] *= inv, then, if round_f16, rounded to the nearest f16 (ties to even).
  void (*scale_row)(float* x, std::size_t n, float inv, bool round_f16);
  // The routines that read stored K/V rows, one set per KvType (rows()).
  // A stored element enters the arithmetic as its exact f32 value
  // (kv_row_codec.h), so a type changes what is loaded, never the order.
  KvRowKernels rows_by_type[kKvTypeCount];
  const KvRowKernels& rows(KvType t) const { return rows_by_type[static_cast<int>(t)]; }
  // dst[i] = x[i] as f16, round to nearest even; what f32_to_f16 gives.
  void (*f32_to_f16_row)(const float* x, std::byte* dst, std::size_t n);
};

const AttnKernels& attn_kernels(KernelPath p);
inline const AttnKernels& active_attn_kernels() { return attn_kernels(active_kernel_path()); }

const AttnKernels& scalar_attn_kernels();
const AttnKernels& avx2_attn_kernels();
const AttnKernels& avx512_attn_kernels();
const AttnKernels& neon_attn_kernels();  // Neon and NeonDot: one numerics family

}  // namespace clm
