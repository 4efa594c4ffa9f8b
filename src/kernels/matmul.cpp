#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace clm {

namespace {

// Loop order only; no reduction depends on it. A thread's weight rows are
// taken in blocks of about kWeightBlockBytes, which stay in L2 while the
// batch streams past them four activation rows at a time; those four rows
// (a few KiB to tens of KiB) stay in L1 while the block's rows stream past.
constexpr std::size_t kWeightBlockBytes = 128u << 10;

// Dot computes one output; Dot4 four consecutive batch rows at once, bitwise
// as Dot would (vec_dot.h promises it), so grouping rows is free to vary.
template <class Dot, class Dot4>
void for_each_output(const WeightMatrix& w, const std::byte* act, std::size_t act_stride, int n, float* y,
                     ThreadPool& pool, Dot dot, Dot4 dot4) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const std::size_t rows = static_cast<std::size_t>(w.rows);
  const std::size_t nn = static_cast<std::size_t>(n);
  const std::size_t block_rows = std::max<std::size_t>(1, kWeightBlockBytes / std::max<std::size_t>(1, w.row_bytes));
  pool.parallel_for(rows, [&](std::size_t begin, std::size_t end) {
    for (std::size_t o0 = begin; o0 < end; o0 += block_rows) {
      const std::size_t o1 = std::min(end, o0 + block_rows);
      std::size_t r = 0;
      for (; r + 4 <= nn; r += 4) {
        const std::byte* xr = act + r * act_stride;
        for (std::size_t o = o0; o < o1; ++o) {
          float out[4];
          dot4(w.data + o * w.row_bytes, xr, act_stride, cols, out);
          for (std::size_t j = 0; j < 4; ++j) y[(r + j) * rows + o] = out[j];
        }
      }
      for (; r < nn; ++r)
        for (std::size_t o = o0; o < o1; ++o)
          y[r * rows + o] = dot(w.data + o * w.row_bytes, act + r * act_stride, cols);
    }
  });
}

// Quantized copies of the activation rows (Q8_0 or Q8_K) for the quantized weight types.
std::byte* activation_buffer(std::size_t bytes) {
  thread_local std::vector<std::byte> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int n, float* y, ThreadPool& pool) {
  assert(is_compute_type(w.type));
  assert(w.cols % static_cast<int>(block_elems(w.type)) == 0);
  assert(w.row_bytes >= row_bytes(w.type, static_cast<std::size_t>(w.cols)));
  if (n <= 0 || w.rows <= 0) return;
  const VecKernels& k = active_vec_kernels();
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const auto* xb = reinterpret_cast<const std::byte*>(x);
  const std::size_t x_stride = cols * sizeof(float);

  using FloatDot = float (*)(const std::byte*, const float*, std::size_t);
  using FloatDot4 = void (*)(const std::byte*, const float*, std::size_t, std::size_t, float*);
  auto float_dot = [&](FloatDot dot, FloatDot4 dot4) {
    auto one = [dot](const std::byte* wr, const std::byte* xr, std::size_t c) {
      return dot(wr, reinterpret_cast<const float*>(xr), c);
    };
    auto four = [dot4](const std::byte* wr, const std::byte* xr, std::size_t stride, std::size_t c, float* out) {
      dot4(wr, reinterpret_cast<const float*>(xr), stride / sizeof(float), c, out);
    };
    for_each_output(w, xb, x_stride, n, y, pool, one, four);
  };
  using QuantDot4 = void (*)(const std::byte*, const std::byte*, std::size_t, std::size_t, float*);
  auto quant_dot = [&](float (*dot)(const std::byte*, const std::byte*, std::size_t), QuantDot4 dot4) {
    const WeightType act = activation_type(w.type);
    const std::size_t q_stride = row_bytes(act, cols);
    std::byte* xq = activation_buffer(q_stride * static_cast<std::size_t>(n));
    pool.parallel_for(static_cast<std::size_t>(n), [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) quantize_row(act, x + r * cols, xq + r * q_stride, cols);
    });
    for_each_output(w, xq, q_stride, n, y, pool, dot, dot4);
  };

  switch (w.type) {
    case WeightType::F32: float_dot(k.dot_f32, k.dot4_f32); return;
    case WeightType::F16: float_dot(k.dot_f16, k.dot4_f16); return;
    case WeightType::BF16: float_dot(k.dot_bf16, k.dot4_bf16); return;
    case WeightType::Q8_0: quant_dot(k.dot_q8_0, k.dot4_q8_0); return;
    case WeightType::Q4_0: quant_dot(k.dot_q4_0, k.dot4_q4_0); return;
    case WeightType::Q4_K: quant_dot(k.dot_q4_k, k.dot4_q4_k); return;
    case WeightType::Q5_K: quant_dot(k.dot_q5_k, k.dot4_q5_k); return;
    case WeightType::Q6_K: quant_dot(k.dot_q6_k, k.dot4_q6_k); return;
    default:
      // Types are checked when a model loads; reaching here is a caller bug.
      std::fprintf(stderr, "clmcache: matmul on non-compute weight type %u\n", static_cast<unsigned>(w.type));
      std::abort();
  }
}

}  // namespace clm
