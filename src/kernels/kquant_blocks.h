// Byte layouts of the GGUF k-quant super-blocks (QK_K = 256 elements): Q4_K,
// Q5_K and Q6_K weights, and Q8_K, the activation blocks they multiply with.
// The structs are exact images of the file bytes; the per-super-block float
// steps of the dot products live here so that every kernel path shares them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace clm {

constexpr std::size_t kSuperBlockElems = 256;

// 8 sub-blocks of 32, each with a 6-bit scale sc[j] and a 6-bit min m[j]
// (packed as unpack_k_scales reads them). Element i of sub-block j:
// value = d * sc[j] * q - dmin * m[j], q a 4-bit code. Bytes qs[32c + l]
// hold element l of sub-block 2c (low nibble) and of sub-block 2c + 1 (high).
struct BlockQ4_K {
  uint16_t d;     // f16 bits
  uint16_t dmin;  // f16 bits
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q4_K plus a fifth bit: bit j of qh[l] is the 16s bit of element l of
// sub-block j, so q is 5 bits (0..31).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16 with int8 scales: value = d * scales[j] * (q - 32), q
// 6 bits. Each half h of 128 elements uses ql[64h ..] and qh[32h ..]: for
// l < 32, element l takes ql[l] & 15 and qh[l] bits 0-1, element l + 32
// ql[l + 32] & 15 and bits 2-3, element l + 64 ql[l] >> 4 and bits 4-5,
// element l + 96 ql[l + 32] >> 4 and bits 6-7 (the high bits are q's 16s and 32s).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // f16 bits
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activations: value = d * qs[i], qs in [-127, 127]; bsums[j] is the sum of
// qs[16j .. 16j + 15], which turns the mins of Q4_K/Q5_K and the -32 of Q6_K
// into one small integer product per sub-block.
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlockElems];
  int16_t bsums[kSuperBlockElems / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// Rows of these blocks have no alignment promise (Q6_K rows are 210 bytes a
// block, mmapped rows come as they are), so fields are read through bytes.
template <class T>
inline T load_field(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The 12 scale bytes of Q4_K/Q5_K: bytes 0-3 hold sc[0..3] in their low 6
// bits, bytes 4-7 m[0..3]; bytes 8-11 hold the low 4 bits of sc[4..7] (low
// nibble) and m[4..7] (high nibble), whose top 2 bits sit in the top 2 bits
// of bytes 0-3 (sc) and 4-7 (m).
inline void unpack_k_scales(const uint8_t* s, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = static_cast<uint8_t>(s[j] & 63);
    m[j] = static_cast<uint8_t>(s[j + 4] & 63);
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 15) | ((s[j] >> 6) << 4));
    m[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}
inline void pack_k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

// The canonical reduction of the k-quant dots. Every path follows it, so all
// of them return bitwise the same float (and the SIMD ones need no horizontal
// integer sum per super-block, only vector steps).
//
// A super-block's exact integer products are gathered into kKLanes int32
// lanes: lane m holds the elements e with (e % 32) / 4 == m, each product
// code * xq times the scale of its sub-block. These are the lanes vpmaddubsw
// + vpmaddwd leave in a 256-bit register after each 32 elements; a 512-bit
// register's two halves add into them exactly. Q4_K/Q5_K also have min lanes,
// lane j = m[j] * (sum of xq over sub-block j) (vpmaddwd of the block sums
// with the mins, each twice). Q6_K's codes carry +32 and its lane m subtracts
// 32 * (scales[2m] * bsums[2m] + scales[2m+1] * bsums[2m+1]).
//
// Each lane has a float accumulator across the row's super-blocks: code lanes
// acc[m] = fma(d * xd, isum[m], acc[m]), min lanes
// acc[m] = fma(-(dmin * xd), msum[m], acc[m]); at the end of the row the two
// are added lane by lane and the lanes summed in one fixed tree. fma rounds
// once whether or not the CPU has it, and int32 -> float rounds the same way
// everywhere, so the result is a function of the inputs alone.
constexpr int kKLanes = 8;

inline void accumulate_k_lanes(float* acc, float scale, const int32_t* lanes) {
  for (int m = 0; m < kKLanes; ++m) acc[m] = std::fma(scale, static_cast<float>(lanes[m]), acc[m]);
}
// The tree is what an AVX hsum of one 256-bit register computes: halves,
// then pairs, then the last two.
inline float k_lanes_total(const float* v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
inline float k_lanes_total(const float* code, const float* mins) {
  float v[kKLanes];
  for (int m = 0; m < kKLanes; ++m) v[m] = code[m] + mins[m];
  return k_lanes_total(v);
}

}  // namespace clm
