// Reads one stored element of a float weight or cache row as f32, for the
// scalar tails of the SIMD kernels. memcpy because rows need not be aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "util/half.h"

namespace clm {

inline float read_f32_element(const std::byte* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float read_f16_element(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

inline float read_bf16_element(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return bf16_to_f32(h);
}

}  // namespace clm
