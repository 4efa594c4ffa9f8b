// The AArch64 Advanced SIMD path of rope_shift_paths.h, for Neon and NeonDot
// alike: four elements per register, the pairs that do not fill one done
// element by element with the same fma. vfmaq_f32 is the reference's fused
// fma; f16 converts exactly to f32 and back to nearest even.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/element_read.h"
#include "kernels/rope_shift_paths.h"
#include "util/half.h"

namespace clm {

namespace {

constexpr std::size_t kLanes = 4;
// As in the x86 paths: cos/sin registers built once per tile of rows, and
// the tile's rows stay in L1 whatever n_rows is.
constexpr int kRowTile = 16;

// Rows need not be aligned for float access, so they are moved as bytes.
struct F32 {
  static constexpr std::size_t kBytes = 4;
  static float32x4_t load(const std::byte* p) { return vreinterpretq_f32_u8(vld1q_u8(reinterpret_cast<const uint8_t*>(p))); }
  static void store(std::byte* p, float32x4_t v) { vst1q_u8(reinterpret_cast<uint8_t*>(p), vreinterpretq_u8_f32(v)); }
  static float load1(const std::byte* p) { return read_f32_element(p); }
  static void store1(std::byte* p, float v) { std::memcpy(p, &v, 4); }
};
struct F16 {
  static constexpr std::size_t kBytes = 2;
  static float32x4_t load(const std::byte* p) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(reinterpret_cast<const uint8_t*>(p))));
  }
  static void store(std::byte* p, float32x4_t v) {
    vst1_u8(reinterpret_cast<uint8_t*>(p), vreinterpret_u8_f16(vcvt_f16_f32(v)));
  }
  static float load1(const std::byte* p) { return read_f16_element(p); }
  static void store1(std::byte* p, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
  }
};

// One pair (elements ia, ib of a row), the reference's expression.
template <class E>
inline void rotate_pair(const std::byte* s, std::byte* d, std::size_t ia, std::size_t ib, float c, float sn) {
  const float x0 = E::load1(s + ia * E::kBytes);
  const float x1 = E::load1(s + ib * E::kBytes);
  E::store1(d + ia * E::kBytes, std::fma(x0, c, x1 * -sn));
  E::store1(d + ib * E::kBytes, std::fma(x1, c, x0 * sn));
}

// [v0 v0 v1 v1] from two consecutive table entries.
inline float32x4_t dup_pairs(const float* v) {
  const float32x2_t two = vld1_f32(v);
  return vzip1q_f32(vcombine_f32(two, two), vcombine_f32(two, two));
}

// Pairs (2i, 2i+1). Per element: fma(x, C, swapped(x) * S) with C = cos of
// the element's pair and S = -sin on the first element of a pair, +sin on the
// second: lane for lane the reference's two expressions.
template <class E>
void rotate_adjacent(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                     const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t n_rot = static_cast<std::size_t>(params.n_rot);
  const std::size_t whole = n_rot / kLanes * kLanes;
  const uint32x4_t neg_first = {0x80000000u, 0u, 0x80000000u, 0u};
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t j = 0; j < whole; j += kLanes) {
      const float32x4_t c = dup_pairs(&table.cos[j / 2]);
      const float32x4_t s = vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(dup_pairs(&table.sin[j / 2])), neg_first));
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + j * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const float32x4_t x = E::load(s_row);
        E::store(d_row, vfmaq_f32(vmulq_f32(vrev64q_f32(x), s), x, c));
      }
    }
    for (int r = r0; r < r1 && whole < n_rot; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t k = whole; k < n_rot; k += 2)
        rotate_pair<E>(src + off, dst + off, k, k + 1, table.cos[k / 2], table.sin[k / 2]);
    }
  }
}

// Pairs (i, i + n_rot/2): the halves are two registers and cos/sin load as is.
template <class E>
void rotate_neox(const std::byte* src, std::byte* dst, int n_rows, std::size_t row_bytes,
                 const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t half = static_cast<std::size_t>(params.n_rot / 2);
  const std::size_t hi = half * E::kBytes;  // from a pair's first element to its second
  const std::size_t whole = half / kLanes * kLanes;
  for (int r0 = 0; r0 < n_rows; r0 += kRowTile) {
    const int r1 = std::min(n_rows, r0 + kRowTile);
    for (std::size_t i = 0; i < whole; i += kLanes) {
      const float32x4_t c = vld1q_f32(&table.cos[i]);
      const float32x4_t s = vld1q_f32(&table.sin[i]);
      const float32x4_t neg_s = vnegq_f32(s);
      const std::size_t first = static_cast<std::size_t>(r0) * row_bytes + i * E::kBytes;
      const std::byte* s_row = src + first;
      std::byte* d_row = dst + first;
      for (int r = r0; r < r1; ++r, s_row += row_bytes, d_row += row_bytes) {
        const float32x4_t x0 = E::load(s_row);
        const float32x4_t x1 = E::load(s_row + hi);
        E::store(d_row, vfmaq_f32(vmulq_f32(x1, neg_s), x0, c));
        E::store(d_row + hi, vfmaq_f32(vmulq_f32(x0, s), x1, c));
      }
    }
    for (int r = r0; r < r1 && whole < half; ++r) {
      const std::size_t off = static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t i = whole; i < half; ++i)
        rotate_pair<E>(src + off, dst + off, i, i + half, table.cos[i], table.sin[i]);
    }
  }
}

template <class E>
void rotate(const std::byte* src, std::byte* dst, int n_rows, std::size_t stride_elems, const RopeShiftParams& params,
            const RopeShiftTable& table) {
  const std::size_t row_bytes = stride_elems * E::kBytes;
  if (params.neox)
    rotate_neox<E>(src, dst, n_rows, row_bytes, params, table);
  else
    rotate_adjacent<E>(src, dst, n_rows, row_bytes, params, table);
}

}  // namespace

void rope_shift_rotate_neon(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table) {
  if (type == KvType::F16)
    rotate<F16>(src, dst, n_rows, stride_elems, params, table);
  else
    rotate<F32>(src, dst, n_rows, stride_elems, params, table);
}

}  // namespace clm
