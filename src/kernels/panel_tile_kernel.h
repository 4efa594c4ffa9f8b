// The panel tile (vec_dot.h, PanelTileFn) shared by the SIMD paths: outputs
// in the vector lanes. Each path includes this inside its own target region
// after defining its lane traits V:
//   V::Reg, V::kLanes (a divisor of kPanelRows), V::zero(),
//   V::broadcast(const float*), V::fma(a, b, c), V::store(float*, Reg),
// and a panel loader P with P{}(const std::byte*) -> V::Reg, the kLanes
// weights stored there converted to f32 exactly.
//
// Per step k a micro tile loads each panel's kPanelRows weights once and
// broadcasts each activation row's x[k] once, then does one fma per (panel
// register, activation row): no horizontal sums, and every output's
// accumulator sees exactly acc = fma(w[k], x[k], acc) for k = 0 .. n-1 from
// +0, the canonical order, whatever the tile shape.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

namespace clm {
namespace {

// NP panels (panel_bytes apart) times X activation rows (x_stride floats
// apart): the first `valid` rows of the NP * kPanelRows are stored to y.
template <class V, class P, int NP, int X>
void panel_micro(const std::byte* p, std::size_t panel_bytes, int valid, const float* x, std::size_t x_stride,
                 std::size_t n, float* y, std::size_t y_stride) {
  constexpr int kRegs = kPanelRows / static_cast<int>(V::kLanes);  // registers per panel
  constexpr int kW = NP * kRegs;
  constexpr std::size_t kStepBytes = kPanelRows * P::kBytes;  // one k of one panel
  typename V::Reg acc[kW][X];
  for (int a = 0; a < kW; ++a)
    for (int j = 0; j < X; ++j) acc[a][j] = V::zero();
  const auto wptr = [&](int a, std::size_t k) {
    return p + static_cast<std::size_t>(a / kRegs) * panel_bytes + k * kStepBytes +
           static_cast<std::size_t>(a % kRegs) * V::kLanes * P::kBytes;
  };
  // A single activation row (decode) streams every panel byte from memory
  // once, NP panels at once; each panel asks for the line kAhead bytes on
  // once per line. Past a panel's end that line belongs to the panel NP
  // further on, which is what this thread reads next. (Prefetches never
  // fault, so running past the matrix is harmless.)
  constexpr std::size_t kAhead = 1024;
  constexpr std::size_t kStepsPerLine = std::max<std::size_t>(1, 64 / kStepBytes);
  for (std::size_t k = 0; k < n; ++k) {
    if constexpr (X == 1) {
      if (k % kStepsPerLine == 0) {
        const std::size_t off = k * kStepBytes + kAhead;
        for (int q = 0; q < NP; ++q) {
          const std::size_t panel = static_cast<std::size_t>(q) + (off < panel_bytes ? 0 : NP);
          const std::size_t at = off < panel_bytes ? off : off - panel_bytes;
          __builtin_prefetch(p + panel * panel_bytes + at, 0, 3);
        }
      }
    }
    typename V::Reg wv[kW];
    for (int a = 0; a < kW; ++a) wv[a] = P{}(wptr(a, k));
    for (int j = 0; j < X; ++j) {
      const typename V::Reg xb = V::broadcast(x + static_cast<std::size_t>(j) * x_stride + k);
      for (int a = 0; a < kW; ++a) acc[a][j] = V::fma(wv[a], xb, acc[a][j]);
    }
  }
  for (int j = 0; j < X; ++j) {
    float out[NP * kPanelRows];
    for (int a = 0; a < kW; ++a) V::store(out + static_cast<std::size_t>(a) * V::kLanes, acc[a][j]);
    std::copy_n(out, valid, y + static_cast<std::size_t>(j) * y_stride);
  }
}

using PanelMicroFn = void (*)(const std::byte*, std::size_t, int, const float*, std::size_t, std::size_t, float*,
                              std::size_t);

// panel_micro for every shape up to RP panels x RX rows, indexed by (NP - 1) * RX + (X - 1).
template <class V, class P, int RP, int RX, std::size_t... I>
constexpr std::array<PanelMicroFn, sizeof...(I)> panel_micro_table(std::index_sequence<I...>) {
  return {&panel_micro<V, P, static_cast<int>(I) / RX + 1, static_cast<int>(I) % RX + 1>...};
}

// A PanelTileFn made of micro tiles of at most RP panels x RX activation
// rows, or RP1 panels when there is a single activation row (decode), where
// more panels in flight means more independent chains and memory streams.
template <class V, class P, int RP, int RX, int RP1>
void panel_tile(const std::byte* panels, std::size_t panel_bytes, int nw, const float* x, std::size_t x_stride,
                int nx, std::size_t n, float* y, std::size_t y_stride) {
  static constexpr auto kTable = panel_micro_table<V, P, RP, RX>(std::make_index_sequence<RP * RX>{});
  static constexpr auto kSingle = panel_micro_table<V, P, RP1, 1>(std::make_index_sequence<RP1>{});
  const int np = (nw + kPanelRows - 1) / kPanelRows;
  const auto run = [&](const PanelMicroFn* table, int stride, int rp, int j, int xn) {
    for (int a = 0; a < np; a += rp) {
      const int count = std::min(rp, np - a);
      const int valid = std::min(nw - a * kPanelRows, count * kPanelRows);
      table[(count - 1) * stride + (xn - 1)](panels + static_cast<std::size_t>(a) * panel_bytes, panel_bytes, valid,
                                             x + static_cast<std::size_t>(j) * x_stride, x_stride, n,
                                             y + static_cast<std::size_t>(j) * y_stride + a * kPanelRows, y_stride);
    }
  };
  if (nx == 1) return run(kSingle.data(), 1, RP1, 0, 1);
  for (int j = 0; j < nx; j += RX) run(kTable.data(), RX, RP, j, std::min(RX, nx - j));
}

}  // namespace
}  // namespace clm
