// y = x W^T for a stored weight matrix (F32, F16, BF16, Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K) and a batch of f32 activation rows. Batch-invariant: every output
// element is one call of one dot routine whose reduction order depends only on
// cols and the kernel path, so a row's result is bitwise the same whatever the
// batch size, its place in the batch, or the thread count. F16 and BF16
// outputs are one fused multiply-add chain over k (vec_dot.h, PanelTileFn),
// the same bits on every path.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/weight_type.h"
#include "util/thread_pool.h"

namespace clm {

// GGUF/ggml layout: dims[0] = cols. Row o (an output feature) is `cols`
// elements stored contiguously at data + o * row_bytes.
// F16 and BF16 matrices are multiplied from a panel copy (float_panels.h),
// made once when a model loads: `panels` points to it. Where it is null
// (tests, tools) matmul packs the matrix for the call.
struct WeightMatrix {
  WeightType type;
  const std::byte* data;
  int rows;
  int cols;
  std::size_t row_bytes;
  const std::byte* panels = nullptr;
};

// x: [n][cols] row-major; y: [n][rows], y[r * rows + o] = dot(W row o, x row r).
// For quantized weights each activation row is first quantized to
// activation_type(w.type) (Q8_0, or Q8_K for the k-quants; per row, so
// independently of n) and blocks are multiplied as integers.
// That staging buffer is kept per calling thread and only grows, so steady
// calls do not allocate. Preconditions: is_compute_type(w.type), cols a
// multiple of block_elems(w.type), w.row_bytes >= row_bytes(w.type, cols),
// y does not overlap x. Must not be called from inside a pool task.
void matmul(const WeightMatrix& w, const float* x, int n, float* y, ThreadPool& pool);

// The row-wise step that produces a matmul's input rows (a norm, a residual
// add, SwiGLU's product): called as prepare(r) for every r in [0, n), it must
// write row r of x, through the caller's own pointer (and may touch the
// caller's other data of row r only).
// For a quantized weight it runs in the loop that quantizes the rows, row r
// just before its quantization, so the step costs no hand-off of its own; for
// a float weight it runs in a loop of its own before the product. Either way
// each row's arithmetic is what running the step first would give.
class RowPrep {
 public:
  RowPrep() = default;
  template <class Fn>
  explicit RowPrep(Fn& fn)
      : call_([](void* ctx, std::size_t r) { (*static_cast<Fn*>(ctx))(r); }), ctx_(&fn) {}
  explicit operator bool() const { return call_ != nullptr; }
  void operator()(std::size_t r) const { call_(ctx_, r); }

 private:
  void (*call_)(void*, std::size_t) = nullptr;
  void* ctx_ = nullptr;
};

// matmul with its input rows made by prepare (see RowPrep).
void matmul(const WeightMatrix& w, const float* x, int n, float* y, ThreadPool& pool, RowPrep prepare);

// One product of matmul_shared_input: y = x W^T, laid out as for matmul.
struct MatmulOutput {
  const WeightMatrix* w;
  float* y;
};

// matmul for several weight matrices applied to the same activation rows
// (the q, k and v projections; gate and up): x is quantized once and the
// threads split the rows of all products in one parallel loop, which saves a
// hand-off per matrix in a decode step. Each y is bitwise what matmul(*w, x,
// n, y) gives. Matrices of different types or widths are run one by one.
// Same preconditions as matmul for each; no y may overlap x or another y.
void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool);

// matmul_shared_input with its input rows made by prepare (see RowPrep).
void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool,
                         RowPrep prepare);

}  // namespace clm
