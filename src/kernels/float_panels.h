// F16 and BF16 weight matrices repacked for matmul's panel tiles (vec_dot.h,
// PanelTileFn): panel p holds output rows 16p .. 16p + 15 interleaved along
// the reduction, element (row 16p + i, column k) at index k * 16 + i, stored
// in the matrix's own type (so a panel is 16 * cols * 2 bytes); the rows of
// the last panel past the matrix are zero. A tile then loads one vector of
// 16 outputs' weights per k and needs no horizontal sums.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/matmul.h"
#include "kernels/weight_type.h"

namespace clm {

// The types matmul multiplies in panels.
inline bool uses_panels(WeightType t) { return t == WeightType::F16 || t == WeightType::BF16; }

// Bytes of one panel of a matrix with `cols` columns of type t (F16 or BF16).
std::size_t panel_bytes(WeightType t, std::size_t cols);
// Panels of a matrix with `rows` rows, and the bytes they take.
std::size_t panel_count(std::size_t rows);
std::size_t panels_bytes(WeightType t, std::size_t rows, std::size_t cols);

// Panels [first, end) of w (row-major, as stored in GGUF) written to dst,
// which holds panels_bytes(w.type, w.rows, w.cols). Ranges may be packed by
// different threads.
void pack_panels(const WeightMatrix& w, std::byte* dst, std::size_t first, std::size_t end);

// Memory for a matrix's panels, aligned to a cache line so every panel
// vector load stays within one.
class PanelBuffer {
 public:
  explicit PanelBuffer(std::size_t bytes);
  std::byte* data() const { return bytes_.get(); }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> bytes_;
};

// All panels of w written to dst (as above), split over `threads` threads.
void pack_panels_parallel(const WeightMatrix& w, std::byte* dst, int threads);

// w's panels in a buffer of their own, packed on `threads` threads.
PanelBuffer pack_panels(const WeightMatrix& w, int threads = 1);

}  // namespace clm
