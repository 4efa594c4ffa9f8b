// Byte layouts of the GGUF (ggml) Q8_0 and Q4_0 blocks: 32 elements sharing
// one f16 scale d. The structs are exact images of the file bytes; blocks in a
// row are packed with no padding, so code reads them through byte pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace clm {

constexpr std::size_t kQuantBlockElems = 32;

// value[j] = d * qs[j]
struct BlockQ8_0 {
  uint16_t d;  // f16 bits
  int8_t qs[kQuantBlockElems];
};
static_assert(sizeof(BlockQ8_0) == 34);

// value[j] = d * ((qs[j] & 15) - 8), value[j + 16] = d * ((qs[j] >> 4) - 8), j < 16
struct BlockQ4_0 {
  uint16_t d;  // f16 bits
  uint8_t qs[kQuantBlockElems / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Field access through bytes: a block inside a row has 2-byte alignment at
// best, and the rows of an mmapped file come with no alignment promise.
inline uint16_t block_scale_bits(const std::byte* block) {
  uint16_t d;
  std::memcpy(&d, block, sizeof d);
  return d;
}
inline const int8_t* block_q8_values(const std::byte* block) {
  return reinterpret_cast<const int8_t*>(block + offsetof(BlockQ8_0, qs));
}
inline const uint8_t* block_q4_nibbles(const std::byte* block) {
  return reinterpret_cast<const uint8_t*>(block + offsetof(BlockQ4_0, qs));
}

}  // namespace clm
