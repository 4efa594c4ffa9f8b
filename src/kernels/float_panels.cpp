#include "kernels/float_panels.h"

#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "kernels/vec_dot.h"

namespace clm {

namespace {
constexpr std::size_t kElemBytes = 2;  // F16 and BF16
constexpr std::align_val_t kAlign{64};
}  // namespace

std::size_t panel_bytes(WeightType, std::size_t cols) { return kPanelRows * cols * kElemBytes; }
std::size_t panel_count(std::size_t rows) { return (rows + kPanelRows - 1) / kPanelRows; }
std::size_t panels_bytes(WeightType t, std::size_t rows, std::size_t cols) {
  return panel_count(rows) * panel_bytes(t, cols);
}

namespace {

// Columns [k0, k1) of panel rows [0, live) from their rows (src, row_bytes
// apart) into the panel; rows past `live` get zeros.
void pack_columns(const std::byte* src, std::size_t row_bytes, std::size_t live, std::size_t k0, std::size_t k1,
                  uint16_t* out) {
  for (std::size_t k = k0; k < k1; ++k) {
    for (std::size_t i = 0; i < kPanelRows; ++i) {
      uint16_t v = 0;
      if (i < live) std::memcpy(&v, src + i * row_bytes + k * kElemBytes, kElemBytes);
      out[k * kPanelRows + i] = v;
    }
  }
}

#if defined(__SSE2__)
// Eight rows by eight columns of 16-bit values, transposed in registers: out
// column c (8 rows' element k0 + c) lands at out + c * kPanelRows. SSE2 is
// in every x86-64 baseline, and this runs over every weight byte at load.
void transpose8x8(const std::byte* src, std::size_t row_bytes, uint16_t* out) {
  __m128i r[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * row_bytes));
  const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
  const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
  const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
  const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  const __m128i c[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4), _mm_unpacklo_epi64(b1, b5),
                        _mm_unpackhi_epi64(b1, b5), _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6),
                        _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
  for (std::size_t k = 0; k < 8; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k * kPanelRows), c[k]);
}
#endif

}  // namespace

void pack_panels(const WeightMatrix& w, std::byte* dst, std::size_t first, std::size_t end) {
  const std::size_t cols = static_cast<std::size_t>(w.cols);
  const std::size_t rows = static_cast<std::size_t>(w.rows);
  const std::size_t pb = panel_bytes(w.type, cols);
  for (std::size_t p = first; p < end; ++p) {
    auto* out = reinterpret_cast<uint16_t*>(dst + p * pb);  // dst is aligned (PanelBuffer)
    const std::byte* src = w.data + p * kPanelRows * w.row_bytes;
    const std::size_t live = std::min<std::size_t>(kPanelRows, rows - p * kPanelRows);
    std::size_t k = 0;
#if defined(__SSE2__)
    if (live == kPanelRows)
      for (; k + 8 <= cols; k += 8)
        for (std::size_t half = 0; half < kPanelRows; half += 8)
          transpose8x8(src + half * w.row_bytes + k * kElemBytes, w.row_bytes, out + k * kPanelRows + half);
#endif
    pack_columns(src, w.row_bytes, live, k, cols, out);
  }
}

PanelBuffer::PanelBuffer(std::size_t bytes)
    : bytes_(static_cast<std::byte*>(::operator new(std::max<std::size_t>(bytes, 1), kAlign))) {}

void PanelBuffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlign); }

void pack_panels_parallel(const WeightMatrix& w, std::byte* dst, int threads) {
  const std::size_t count = panel_count(static_cast<std::size_t>(w.rows));
  if (count == 0) return;
  const std::size_t t = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), 1, count);
  std::vector<std::thread> helpers;
  for (std::size_t i = 1; i < t; ++i)
    helpers.emplace_back([&, i] { pack_panels(w, dst, count * i / t, count * (i + 1) / t); });
  pack_panels(w, dst, 0, count / t);
  for (std::thread& h : helpers) h.join();
}

PanelBuffer pack_panels(const WeightMatrix& w, int threads) {
  PanelBuffer buf(panels_bytes(w.type, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)));
  pack_panels_parallel(w, buf.data(), threads);
  return buf;
}

}  // namespace clm
