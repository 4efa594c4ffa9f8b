// The arithmetic ceiling of this CPU on the path the kernels run: loops of
// nothing but the instructions the matmul tiles spend their time in, over
// enough independent registers to keep every pipe busy, so that a kernel's
// rate can be read as a share of what the core can do at all.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/cpu_features.h"

namespace clm {

// One loop of a probe: `iterations` rounds of independent operations. It
// returns the operations done (an f32 fma counts 2, a byte product added in
// counts 2) and stores a value derived from every register in *sink, so the
// work cannot be dropped.
using PeakLoop = double (*)(std::uint64_t iterations, float* sink);

struct PeakLoops {
  PeakLoop fma_f32;
  std::string_view fma_kind;  // the instruction measured, e.g. "vfmadd zmm"
  // Signed-by-unsigned byte dot products, the integer core of the Q8_0 /
  // Q4_0 tiles; null where the path has none (scalar).
  PeakLoop dot_i8;
  std::string_view dot_kind;
};

const PeakLoops& peak_loops(KernelPath p);

// One table per translation unit, each compiled for its own instruction set.
const PeakLoops& scalar_peak_loops();
const PeakLoops& avx2_peak_loops();
const PeakLoops& avx512_peak_loops();
const PeakLoops& avx512_vnni_peak_loops();
const PeakLoops& neon_peak_loops();
const PeakLoops& neon_dot_peak_loops();

}  // namespace clm
