// Reading one q4_0 element, and its group's scale, on the SIMD paths: F16C
// converts the f16 scale exactly, as read_f16_element does, without its
// branches; heads narrower than a register take this per element. Included
// inside a target region that enables f16c (attn_kernels_avx2.cpp,
// attn_kernels_avx512.cpp), whose q4_0 loaders derive from it.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kv_row_codec.h"

namespace clm {
namespace {

struct Q4ElementF16c {
  static float scale(const std::byte* row, std::size_t i) {
    uint16_t d;
    std::memcpy(&d, row + q4_scale_offset(i), 2);
    return _cvtsh_ss(d);
  }
  // Exactly read_q4_0_element(row, i).
  static float one(const std::byte* row, std::size_t i) { return scale(row, i) * static_cast<float>(q4_value(row, i)); }
};

}  // namespace
}  // namespace clm
