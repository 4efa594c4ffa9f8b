#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/float_panels.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace clm {

namespace {

// Loop order only; no reduction depends on it. A thread's weight rows are
// taken in blocks of about kWeightBlockBytes, which stay in L2 while the
// batch streams past them kTileX activation rows at a time; those rows (f32,
// 12 of 2048 columns are 96 KiB) mostly stream from L2 too, while the block's
// rows pass kTileW at a time.
constexpr std::size_t kWeightBlockBytes = 128u << 10;
// Every block streams all n activation rows past it once, so a block of few
// rows pays for that stream with little arithmetic. F32 weights' activation
// rows are f32 (four times the bytes of the quantized types' Q8 copies), and
// (measured when F16 weights still took these tiles) 128 KiB of 5632-wide
// f16 rows (a 1B model's ffn_down) is a single tile of 8: there
// the activations, 11 MiB for a 512-token prompt, came from L3 once per 8
// weight rows and the tile ran at 70% of its speed on 2048-wide rows. Float
// blocks therefore take at least kMinFloatBlockRows rows, up to
// kMaxFloatBlockBytes, which with a tile of activation rows still fits a
// 1 MiB L2.
constexpr std::size_t kMinFloatBlockRows = 64;
constexpr std::size_t kMaxFloatBlockBytes = 768u << 10;

// Tiles of kTileW weight rows per block of w.
std::size_t block_tile_count(const WeightMatrix& w) {
  const std::size_t tile_bytes = std::max<std::size_t>(1, w.row_bytes * kTileW);
  std::size_t tiles = kWeightBlockBytes / tile_bytes;
  if (activation_type(w.type) == WeightType::F32)
    tiles = std::max(tiles, std::min(kMinFloatBlockRows / kTileW, kMaxFloatBlockBytes / tile_bytes));
  return std::max<std::size_t>(1, tiles);
}

// The tiles of one product, in the order threads split them.
std::size_t tile_rows_count(const WeightMatrix& w) {
  return (static_cast<std::size_t>(w.rows) + kTileW - 1) / kTileW;
}

// Calls tile() over output tiles [t_begin, t_end) of one product (tiles of at
// most kTileW weight rows by kTileX activation rows, counted along the rows).
template <class Tile>
void run_tiles(const WeightMatrix& w, float* y, std::size_t t_begin, std::size_t t_end, const std::byte* act,
               std::size_t act_stride, int n, const Tile& tile) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const std::size_t rows = static_cast<std::size_t>(w.rows);
  const std::size_t nn = static_cast<std::size_t>(n);
  constexpr std::size_t tw = kTileW;
  constexpr std::size_t tx = kTileX;
  const std::size_t block_tiles = block_tile_count(w);
  for (std::size_t t0 = t_begin; t0 < t_end; t0 += block_tiles) {
    const std::size_t o0 = t0 * tw;
    const std::size_t o1 = std::min(rows, std::min(t_end, t0 + block_tiles) * tw);
    for (std::size_t r = 0; r < nn; r += tx) {
      const int nx = static_cast<int>(std::min(tx, nn - r));
      for (std::size_t o = o0; o < o1; o += tw)
        tile(w.data + o * w.row_bytes, w.row_bytes, static_cast<int>(std::min(tw, o1 - o)), act + r * act_stride,
             act_stride, nx, cols, y + r * rows + o, rows);
    }
  }
}

// Every tile of every product, in one parallel loop: the threads split the
// tiles of all the products together, so several small matrices (a decode
// step's q, k and v) cost one hand-off, not one each.
template <class Tile>
void for_each_tile(std::span<const MatmulOutput> outs, const std::byte* act, std::size_t act_stride, int n,
                   ThreadPool& pool, const Tile& tile) {
  std::size_t total = 0;
  for (const MatmulOutput& o : outs) total += tile_rows_count(*o.w);
  pool.parallel_for(total, [&](std::size_t begin, std::size_t end) {
    std::size_t base = 0;
    for (const MatmulOutput& o : outs) {
      const std::size_t count = tile_rows_count(*o.w);
      const std::size_t b = std::max(begin, base), e = std::min(end, base + count);
      if (b < e) run_tiles(*o.w, o.y, b - base, e - base, act, act_stride, n, tile);
      base += count;
    }
  });
}

using FloatDot = float (*)(const std::byte*, const float*, std::size_t);
using FloatDot4 = void (*)(const std::byte*, const float*, std::size_t, std::size_t, float*);
using QuantDot = float (*)(const std::byte*, const std::byte*, std::size_t);
using QuantDot4 = void (*)(const std::byte*, const std::byte*, std::size_t, std::size_t, float*);

// Float rows are passed as bytes to tiles; the float dots take floats and a stride in floats.
inline float dot_bytes(FloatDot dot, const std::byte* w, const std::byte* x, std::size_t n) {
  return dot(w, reinterpret_cast<const float*>(x), n);
}
inline void dot4_bytes(FloatDot4 dot4, const std::byte* w, const std::byte* x, std::size_t stride, std::size_t n,
                       float* out) {
  dot4(w, reinterpret_cast<const float*>(x), stride / sizeof(float), n, out);
}
inline float dot_bytes(QuantDot dot, const std::byte* w, const std::byte* x, std::size_t n) { return dot(w, x, n); }
inline void dot4_bytes(QuantDot4 dot4, const std::byte* w, const std::byte* x, std::size_t stride, std::size_t n,
                       float* out) {
  dot4(w, x, stride, n, out);
}

template <class Dot, class Dot4>
struct TileFromDots {
  Dot dot;
  Dot4 dot4;
  void operator()(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
                  std::size_t n, float* y, std::size_t y_stride) const {
    for (int i = 0; i < nw; ++i) {
      const std::byte* wr = w + static_cast<std::size_t>(i) * w_stride;
      int j = 0;
      for (; j + 4 <= nx; j += 4) {
        float out[4];
        dot4_bytes(dot4, wr, x + static_cast<std::size_t>(j) * x_stride, x_stride, n, out);
        for (int k = 0; k < 4; ++k) y[static_cast<std::size_t>(j + k) * y_stride + i] = out[k];
      }
      for (; j < nx; ++j)
        y[static_cast<std::size_t>(j) * y_stride + i] = dot_bytes(dot, wr, x + static_cast<std::size_t>(j) * x_stride, n);
    }
  }
};

// Loop order only, as for the tiles above: a thread's panels are taken in
// blocks of about kPanelBlockBytes (at least the two panels of a register
// tile), which stay in L2 while the activation rows stream past them kTileX
// at a time; those rows (12 of 5632 columns are 264 KiB) fit beside them.
constexpr std::size_t kPanelBlockBytes = 384u << 10;

// Panels [p_begin, p_end) of one F16 / BF16 product.
void run_panels(const WeightMatrix& w, float* y, std::size_t p_begin, std::size_t p_end, const float* x, int n,
                PanelTileFn tile) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const std::size_t rows = static_cast<std::size_t>(w.rows);
  const std::size_t nn = static_cast<std::size_t>(n);
  const std::size_t pb = panel_bytes(w.type, cols);
  // One activation row reuses nothing: its panels go to the tile in one run,
  // so decode's micro tiles always walk their full width.
  const std::size_t block = n == 1 ? p_end - p_begin : std::max<std::size_t>(2, kPanelBlockBytes / pb);
  for (std::size_t p0 = p_begin; p0 < p_end; p0 += block) {
    const std::size_t row0 = p0 * kPanelRows;
    const int nw = static_cast<int>(std::min(rows, std::min(p_end, p0 + block) * kPanelRows) - row0);
    for (std::size_t r = 0; r < nn; r += kTileX)
      tile(w.panels + p0 * pb, pb, nw, x + r * cols, cols, static_cast<int>(std::min<std::size_t>(kTileX, nn - r)),
           cols, y + r * rows + row0, rows);
  }
}

// Every panel of every product in one parallel loop, as for_each_tile.
void for_each_panel(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool, PanelTileFn tile) {
  std::size_t total = 0;
  for (const MatmulOutput& o : outs) total += panel_count(static_cast<std::size_t>(o.w->rows));
  pool.parallel_for(total, [&](std::size_t begin, std::size_t end) {
    std::size_t base = 0;
    for (const MatmulOutput& o : outs) {
      const std::size_t count = panel_count(static_cast<std::size_t>(o.w->rows));
      const std::size_t b = std::max(begin, base), e = std::min(end, base + count);
      if (b < e) run_panels(*o.w, o.y, b - base, e - base, x, n, tile);
      base += count;
    }
  });
}

// for_each_panel for matrices that may lack their panels: those are packed
// for this call (a loaded model's all have them, so this never allocates there).
void for_each_panel_packing(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool,
                            PanelTileFn tile) {
  if (std::all_of(outs.begin(), outs.end(), [](const MatmulOutput& o) { return o.w->panels != nullptr; }))
    return for_each_panel(outs, x, n, pool, tile);
  std::vector<PanelBuffer> packed;
  std::vector<WeightMatrix> ws;
  packed.reserve(outs.size());
  ws.reserve(outs.size());
  std::vector<MatmulOutput> with_panels;
  for (const MatmulOutput& o : outs) {
    ws.push_back(*o.w);
    if (ws.back().panels == nullptr) ws.back().panels = packed.emplace_back(pack_panels(*o.w)).data();
    with_panels.push_back({&ws.back(), o.y});
  }
  for_each_panel(with_panels, x, n, pool, tile);
}

// Quantized copies of the activation rows (Q8_0 or Q8_K) for the quantized weight types.
std::byte* activation_buffer(std::size_t bytes) {
  thread_local std::vector<std::byte> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int n, float* y, ThreadPool& pool) {
  const MatmulOutput out{&w, y};
  matmul_shared_input(std::span<const MatmulOutput>(&out, 1), x, n, pool);
}

void matmul(const WeightMatrix& w, const float* x, int n, float* y, ThreadPool& pool, RowPrep prepare) {
  const MatmulOutput out{&w, y};
  matmul_shared_input(std::span<const MatmulOutput>(&out, 1), x, n, pool, prepare);
}

void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool) {
  matmul_shared_input(outs, x, n, pool, RowPrep{});
}

void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int n, ThreadPool& pool,
                         RowPrep prepare) {
  if (n <= 0 || outs.empty()) return;
  // The paths without a quantization loop prepare every row first, in a loop of their own.
  auto prepare_all = [&] {
    if (!prepare) return;
    pool.parallel_for(static_cast<std::size_t>(n), [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) prepare(r);
    });
  };
  const WeightMatrix& w = *outs.front().w;
  for (const MatmulOutput& o : outs) {
    assert(is_compute_type(o.w->type));
    assert(o.w->cols % static_cast<int>(block_elems(o.w->type)) == 0);
    assert(o.w->row_bytes >= row_bytes(o.w->type, static_cast<std::size_t>(o.w->cols)));
    if (o.w->type != w.type || o.w->cols != w.cols) {
      // Mixed types (a Q4_K_M file's Q6_K v beside Q4_K q and k) take one loop each.
      prepare_all();
      for (const MatmulOutput& each : outs) matmul(*each.w, x, n, each.y, pool);
      return;
    }
  }
  const VecKernels& k = active_vec_kernels();
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const auto* xb = reinterpret_cast<const std::byte*>(x);
  const std::size_t x_stride = cols * sizeof(float);

  auto run = [&](const std::byte* act, std::size_t act_stride, TileFn tile, auto dot, auto dot4) {
    if (tile != nullptr) return for_each_tile(outs, act, act_stride, n, pool, tile);
    for_each_tile(outs, act, act_stride, n, pool, TileFromDots<decltype(dot), decltype(dot4)>{dot, dot4});
  };
  auto float_dot = [&](TileFn tile, FloatDot dot, FloatDot4 dot4) {
    prepare_all();
    run(xb, x_stride, tile, dot, dot4);
  };
  auto panel_dot = [&](PanelTileFn tile) {
    prepare_all();
    for_each_panel_packing(outs, x, n, pool, tile);
  };
  auto quant_dot = [&](TileFn tile, QuantDot dot, QuantDot4 dot4) {
    const WeightType act = activation_type(w.type);
    const std::size_t q_stride = row_bytes(act, cols);
    std::byte* xq = activation_buffer(q_stride * static_cast<std::size_t>(n));
    pool.parallel_for(static_cast<std::size_t>(n), [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) {
        if (prepare) prepare(r);
        if (act == WeightType::Q8_0)
          k.quantize_q8_0_row(x + r * cols, xq + r * q_stride, cols);
        else
          quantize_row(act, x + r * cols, xq + r * q_stride, cols);
      }
    });
    run(xq, q_stride, tile, dot, dot4);
  };

  switch (w.type) {
    case WeightType::F32: float_dot(k.tile_f32, k.dot_f32, k.dot4_f32); return;
    case WeightType::F16: panel_dot(k.panel_f16); return;
    case WeightType::BF16: panel_dot(k.panel_bf16); return;
    case WeightType::Q8_0: quant_dot(k.tile_q8_0, k.dot_q8_0, k.dot4_q8_0); return;
    case WeightType::Q4_0: quant_dot(k.tile_q4_0, k.dot_q4_0, k.dot4_q4_0); return;
    case WeightType::Q4_K: quant_dot(k.tile_q4_k, k.dot_q4_k, k.dot4_q4_k); return;
    case WeightType::Q5_K: quant_dot(k.tile_q5_k, k.dot_q5_k, k.dot4_q5_k); return;
    case WeightType::Q6_K: quant_dot(k.tile_q6_k, k.dot_q6_k, k.dot4_q6_k); return;
    default:
      // Types are checked when a model loads; reaching here is a caller bug.
      std::fprintf(stderr, "clmcache: matmul on non-compute weight type %u\n", static_cast<unsigned>(w.type));
      std::abort();
  }
}

}  // namespace clm
