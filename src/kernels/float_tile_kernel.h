// The register-tiled float dot shared by the SIMD paths: weights stored as
// f32 times f32 activations (F16 and BF16 weights take the panel tiles of
// panel_tile_kernel.h). Each path includes this inside its
// own target region after defining its lane traits V:
//   V::Reg, V::kLanes, V::zero(), V::load_x(const float*), V::fma(a, b, c),
//   V::sum(Reg) -> float (a fixed horizontal reduction),
// and weight loaders L with L::kBytes, L{}(const std::byte*) -> V::Reg and
// L{}.scalar(const std::byte*) -> float.
//
// The canonical order of one output, the only one any routine here performs:
// a single V::kLanes-wide accumulator, acc = fma(w, x, acc) per kLanes-element
// step, then V::sum, then the remaining elements added in order. It depends on
// n alone. One accumulator per output (rather than several per output) is
// what lets a tile keep many outputs in registers at once: a W x X tile loads
// W weight vectors and X activation vectors for W * X fmas, where a dot with
// several accumulators per output reloads operands for every few fmas.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

namespace clm {
namespace {

template <class V, class L>
inline float finish_output(typename V::Reg acc, const std::byte* w, const float* x, std::size_t i, std::size_t n) {
  float sum = V::sum(acc);
  for (; i < n; ++i) sum += L{}.scalar(w + i * L::kBytes) * x[i];
  return sum;
}

// W weight rows (w_stride bytes apart) times X activation rows (x_stride bytes
// apart): y[j * y_stride + a] = dot of weight row a and activation row j.
// The activation vectors of a step are held while the weight vectors stream
// past them, each loaded and converted once for all X rows.
template <class V, class L, int W, int X>
void micro_tile(const std::byte* w, std::size_t w_stride, const std::byte* x, std::size_t x_stride, std::size_t n,
                float* y, std::size_t y_stride) {
  constexpr std::size_t kL = V::kLanes;
  typename V::Reg acc[W][X];
  for (int a = 0; a < W; ++a)
    for (int j = 0; j < X; ++j) acc[a][j] = V::zero();
  const auto xrow = [&](int j) {
    return reinterpret_cast<const float*>(x + static_cast<std::size_t>(j) * x_stride);
  };
  const auto wrow = [&](int a) { return w + static_cast<std::size_t>(a) * w_stride; };
  // A single activation row (decode) streams each weight byte from memory
  // once, W rows at once: short rows (a 110M model's are 24 cache lines) in
  // too many streams for the hardware prefetcher to follow well. So each row
  // asks for the line kAhead bytes on, once per line; past its end that is
  // the same row of the next tile, which lies W rows further on and is what
  // the matmul reads next. (Not for W = 1: a lone dot has no next tile.)
  constexpr std::size_t kAhead = 1024;
  constexpr std::size_t kStepsPerLine = std::max<std::size_t>(1, 64 / (kL * L::kBytes));
  const std::size_t row_len = n * L::kBytes;
  std::size_t i = 0;
  for (; i + kL <= n; i += kL) {
    if constexpr (X == 1 && W > 1) {
      if ((i / kL) % kStepsPerLine == 0) {
        const std::size_t off = i * L::kBytes + kAhead;
        for (int a = 0; a < W; ++a) {
          const std::byte* p = off < row_len ? wrow(a) + off : wrow(a + W) + (off - row_len);
          __builtin_prefetch(p, 0, 3);  // read, keep in all levels (prefetcht0, prfm pldl1keep)
        }
      }
    }
    typename V::Reg xv[X];
    for (int j = 0; j < X; ++j) xv[j] = V::load_x(xrow(j) + i);
    for (int a = 0; a < W; ++a) {
      const typename V::Reg wv = L{}(wrow(a) + i * L::kBytes);
      for (int j = 0; j < X; ++j) acc[a][j] = V::fma(wv, xv[j], acc[a][j]);
    }
  }
  for (int a = 0; a < W; ++a)
    for (int j = 0; j < X; ++j)
      y[static_cast<std::size_t>(j) * y_stride + static_cast<std::size_t>(a)] =
          finish_output<V, L>(acc[a][j], wrow(a), xrow(j), i, n);
}

using MicroTileFn = void (*)(const std::byte*, std::size_t, const std::byte*, std::size_t, std::size_t, float*,
                             std::size_t);

// micro_tile for every shape up to RW x RX, indexed by (W - 1) * RX + (X - 1).
template <class V, class L, int RW, int RX, std::size_t... I>
constexpr std::array<MicroTileFn, sizeof...(I)> micro_table(std::index_sequence<I...>) {
  return {&micro_tile<V, L, static_cast<int>(I) / RX + 1, static_cast<int>(I) % RX + 1>...};
}

// A TileFn (vec_dot.h) made of micro tiles: at most RW x RX outputs at once,
// or RW1 weight rows when there is a single activation row (decode), where
// more rows in flight means more independent chains and memory streams.
// Which micro tile computes an output changes no operation of it.
template <class V, class L, int RW, int RX, int RW1>
void float_tile(const std::byte* w, std::size_t w_stride, int nw, const std::byte* x, std::size_t x_stride, int nx,
                std::size_t n, float* y, std::size_t y_stride) {
  static constexpr auto kTable = micro_table<V, L, RW, RX>(std::make_index_sequence<RW * RX>{});
  static constexpr auto kSingle = micro_table<V, L, RW1, 1>(std::make_index_sequence<RW1>{});
  if (nx == 1) {
    for (int a = 0; a < nw; a += RW1)
      kSingle[std::min(RW1, nw - a) - 1](w + static_cast<std::size_t>(a) * w_stride, w_stride, x, x_stride, n,
                                         y + a, y_stride);
    return;
  }
  for (int j = 0; j < nx; j += RX) {
    const int xn = std::min(RX, nx - j);
    for (int a = 0; a < nw; a += RW)
      kTable[(std::min(RW, nw - a) - 1) * RX + (xn - 1)](w + static_cast<std::size_t>(a) * w_stride, w_stride,
                                                         x + static_cast<std::size_t>(j) * x_stride, x_stride, n,
                                                         y + static_cast<std::size_t>(j) * y_stride + a, y_stride);
  }
}

template <class V, class L>
float float_dot(const std::byte* w, const float* x, std::size_t n) {
  float out;
  micro_tile<V, L, 1, 1>(w, 0, reinterpret_cast<const std::byte*>(x), 0, n, &out, 1);
  return out;
}

// Four activation rows (x_stride floats apart) against one weight row.
template <class V, class L>
void float_dot4(const std::byte* w, const float* x, std::size_t x_stride, std::size_t n, float* out) {
  micro_tile<V, L, 1, 4>(w, 0, reinterpret_cast<const std::byte*>(x), x_stride * sizeof(float), n, out, 1);
}

}  // namespace
}  // namespace clm
