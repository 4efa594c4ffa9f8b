// The quantized dots of the NEON paths (vec_dot.h) on 128-bit registers:
// Q8_0 / Q4_0 weights against Q8_0 activations, Q4_K / Q5_K / Q6_K against
// Q8_K. Included by vec_dot_neon.cpp and, inside its target region, by
// vec_dot_neon_dot.cpp, after <arm_neon.h>, quant_blocks.h, kquant_blocks.h
// and the includer's struct IntDots, the integer steps, which are all that
// differ between the two paths:
//   IntDots::block(w0, w1, x0, x1) -> int32x4_t: the 32 byte products of a
//     block (w0, x0 elements 0..15, w1, x1 elements 16..31), lane k holding
//     elements 4k .. 4k + 3 and 16 + 4k .. 16 + 4k + 3 (what two sdot leave);
//   IntDots::Scales, IntDots::scales(lo, hi): a super-block's 16 int16
//     scales (lo: 0..7, hi: 8..15) in the form k_group reads them;
//   IntDots::k_group<I0, I1>(lo, hi, q0, q1, x0, x1, scales): 32 k-quant
//     codes (at most 63) times activations, lane m of lo += scale I0 * (sum
//     of elements 4m .. 4m + 3) and lane m of hi += scale I1 * (sum of
//     16 + 4m .. 16 + 4m + 3): the canonical lanes of kquant_blocks.h, 0..3
//     and 4..7.
// Both give the exact integers in the same lanes, so everything after them
// (the float steps here) makes Neon and NeonDot return the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace clm {
namespace {

// f(std::integral_constant<int, I>{}) for I = 0 .. N-1, unrolled in the
// source: lane numbers and shift counts become constants, and arrays of
// registers are indexed by constants only, which GCC keeps in registers
// (indexed in a loop it keeps them on the stack, stored at every step).
template <class F, int... I>
[[gnu::always_inline]] inline void qn_unrolled(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
[[gnu::always_inline]] inline void qn_for(F&& f) {
  qn_unrolled(f, std::make_integer_sequence<int, N>{});
}

// f16 bits as f32: FCVT is exact, as f16_to_f32 is.
inline float qn_f16(const std::byte* p) {
  __fp16 h;
  std::memcpy(&h, p, sizeof h);
  return static_cast<float>(h);
}
inline int8x16_t qn_load_s8(const std::byte* p) { return vld1q_s8(reinterpret_cast<const int8_t*>(p)); }
inline uint8x16_t qn_load_u8(const std::byte* p) { return vld1q_u8(reinterpret_cast<const uint8_t*>(p)); }
// Rows have no alignment promise: int16 fields are loaded as bytes.
inline int16x8_t qn_load_s16(const std::byte* p) { return vreinterpretq_s16_u8(qn_load_u8(p)); }

// The fixed horizontal sum of four lanes: (v0 + v2) + (v1 + v3).
inline float qn_hsum(float32x4_t v) {
  const float32x2_t s = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(s, 0) + vget_lane_f32(s, 1);
}

// The weights of one Q8_0 / Q4_0 block as signed values, elements 0..15 in
// w0 and 16..31 in w1.
struct QnQ8 {
  static constexpr std::size_t kBytes = sizeof(BlockQ8_0);
  static void unpack(const std::byte* b, int8x16_t& w0, int8x16_t& w1) {
    w0 = qn_load_s8(b + offsetof(BlockQ8_0, qs));
    w1 = qn_load_s8(b + offsetof(BlockQ8_0, qs) + 16);
  }
};
struct QnQ4 {
  static constexpr std::size_t kBytes = sizeof(BlockQ4_0);
  // Byte j holds element j (low nibble) and element j + 16 (high nibble).
  static void unpack(const std::byte* b, int8x16_t& w0, int8x16_t& w1) {
    const uint8x16_t bytes = qn_load_u8(b + offsetof(BlockQ4_0, qs));
    const int8x16_t eight = vdupq_n_s8(8);
    w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(15))), eight);
    w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), eight);
  }
};

// R activation rows (x_stride bytes apart) against one weight row, each
// weight block unpacked once for all of them. Per output: each block's four
// exact int32 lanes converted to f32 and fused-added, times d_w * d_x, into
// the even- or odd-block accumulator; the two added and summed at the end.
// Every output sees the operations of the R = 1 case.
template <std::size_t R, class Weights>
void qn_block_dot(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  const std::size_t nb = n / kQuantBlockElems;
  float32x4_t acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::byte* wb = w + b * Weights::kBytes;
    int8x16_t w0, w1;
    Weights::unpack(wb, w0, w1);
    const float dw = qn_f16(wb);
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* xb = xq + r * x_stride + b * sizeof(BlockQ8_0);
      const int8x16_t x0 = qn_load_s8(xb + offsetof(BlockQ8_0, qs)), x1 = qn_load_s8(xb + offsetof(BlockQ8_0, qs) + 16);
      const float32x4_t p = vcvtq_f32_s32(IntDots::block(w0, w1, x0, x1));
      acc[r][b & 1] = vfmaq_n_f32(acc[r][b & 1], p, dw * qn_f16(xb));
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = qn_hsum(vaddq_f32(acc[r][0], acc[r][1]));
}

float dot_q8_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  qn_block_dot<1, QnQ8>(w, xq, 0, n, &out);
  return out;
}
float dot_q4_0(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  qn_block_dot<1, QnQ4>(w, xq, 0, n, &out);
  return out;
}
void dot4_q8_0(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  qn_block_dot<4, QnQ8>(w, xq, x_stride, n, out);
}
void dot4_q4_0(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  qn_block_dot<4, QnQ4>(w, xq, x_stride, n, out);
}

// The k-quant formats, constructed once per super-block: codes(k, q0, q1)
// gives the unsigned codes of the 32-element group k (elements 32k ..
// 32k + 31) in order, scale0(k) / scale1(k) the scales of its halves, and
// finish() adds the block's float steps for one activation row.
//
// The float steps of kquant_blocks.h on the lanes: code lanes
// fma(d * xd, isum, acc), min lanes fma(-(dmin * xd), msum, acc).
inline void qn_code_floats(const int32x4_t (&isum)[2], float scale, float32x4_t (&code)[2]) {
  for (int h = 0; h < 2; ++h) code[h] = vfmaq_n_f32(code[h], vcvtq_f32_s32(isum[h]), scale);
}

template <class Block, bool kFifthBit>
struct QnKMin {
  using BlockType = Block;
  static constexpr bool kMins = true;
  const std::byte* wb;
  int16x8_t s_lo, s_hi;  // sc[0..7]; the second eight unused
  int16x8_t mins;        // m[0..7]
  uint8x16_t qs0, qs1, qh0, qh1;
  explicit QnKMin(const std::byte* block) : wb(block) {
    uint8_t s[8], m[8];
    unpack_k_scales(reinterpret_cast<const uint8_t*>(wb + offsetof(Block, scales)), s, m);
    s_lo = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(s)));
    s_hi = vdupq_n_s16(0);
    mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m)));
    if constexpr (kFifthBit) {
      qh0 = qn_load_u8(wb + offsetof(BlockQ5_K, qh));
      qh1 = qn_load_u8(wb + offsetof(BlockQ5_K, qh) + 16);
    }
  }
  // Group k is sub-block k: the low nibbles of qs[32 (k / 2) ..] for even k,
  // the high ones for odd k, and for Q5_K bit k of qh[..] as the 16s.
  template <int k>
  void codes(int8x16_t& q0, int8x16_t& q1) {
    if constexpr ((k & 1) == 0) {
      qs0 = qn_load_u8(wb + offsetof(Block, qs) + 32 * (k / 2));
      qs1 = qn_load_u8(wb + offsetof(Block, qs) + 32 * (k / 2) + 16);
    }
    const uint8x16_t mask = vdupq_n_u8(15);
    uint8x16_t c0 = (k & 1) ? vshrq_n_u8(qs0, 4) : vandq_u8(qs0, mask);
    uint8x16_t c1 = (k & 1) ? vshrq_n_u8(qs1, 4) : vandq_u8(qs1, mask);
    if constexpr (kFifthBit) {
      const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << k)), sixteen = vdupq_n_u8(16);
      c0 = vorrq_u8(c0, vandq_u8(vtstq_u8(qh0, bit), sixteen));
      c1 = vorrq_u8(c1, vandq_u8(vtstq_u8(qh1, bit), sixteen));
    }
    q0 = vreinterpretq_s8_u8(c0);
    q1 = vreinterpretq_s8_u8(c1);
  }
  // Both halves of group k take sub-block k's scale.
  static constexpr int scale0(int k) { return k; }
  static constexpr int scale1(int k) { return k; }
  // Min lane j: m[j] times the sum of the activations of sub-block j (block
  // sums 2j and 2j + 1).
  void finish(const int32x4_t (&isum)[2], const std::byte* xb, float32x4_t (&code)[2], float32x4_t (&mn)[2]) const {
    const std::byte* bs = xb + offsetof(BlockQ8_K, bsums);
    const int16x8_t pairs = vpaddq_s16(qn_load_s16(bs), qn_load_s16(bs + 16));
    const int32x4_t msum[2] = {vmull_s16(vget_low_s16(pairs), vget_low_s16(mins)), vmull_high_s16(pairs, mins)};
    const float xd = load_field<float>(xb);
    qn_code_floats(isum, qn_f16(wb + offsetof(Block, d)) * xd, code);
    qn_code_floats(msum, -(qn_f16(wb + offsetof(Block, dmin)) * xd), mn);
  }
};

struct QnKQ6 {
  using BlockType = BlockQ6_K;
  static constexpr bool kMins = false;
  const std::byte* wb;
  int16x8_t s_lo, s_hi;  // scales[0..7], scales[8..15]
  uint8x16_t l0a, l0b, l1a, l1b, qha, qhb;
  explicit QnKQ6(const std::byte* block) : wb(block) {
    const int8x16_t s8 = qn_load_s8(wb + offsetof(BlockQ6_K, scales));
    s_lo = vmovl_s8(vget_low_s8(s8));
    s_hi = vmovl_high_s8(s8);
  }
  // Group g = 4h + quarter of half h: ql[64h + 32 (quarter & 1) ..] nibble
  // quarter >> 1, with bits 2 quarter, 2 quarter + 1 of qh[32h ..] as the
  // 16s and 32s.
  template <int g>
  void codes(int8x16_t& q0, int8x16_t& q1) {
    constexpr int h = g / 4, quarter = g % 4;
    if constexpr (quarter == 0) {
      const std::byte* ql = wb + offsetof(BlockQ6_K, ql) + 64 * h;
      l0a = qn_load_u8(ql);
      l0b = qn_load_u8(ql + 16);
      l1a = qn_load_u8(ql + 32);
      l1b = qn_load_u8(ql + 48);
      qha = qn_load_u8(wb + offsetof(BlockQ6_K, qh) + 32 * h);
      qhb = qn_load_u8(wb + offsetof(BlockQ6_K, qh) + 32 * h + 16);
    }
    const auto code = [](uint8x16_t l, uint8x16_t qh) {
      const uint8x16_t low = (quarter >> 1) ? vshrq_n_u8(l, 4) : vandq_u8(l, vdupq_n_u8(15));
      // Bits 2 quarter, 2 quarter + 1 of qh moved to bits 4, 5.
      const uint8x16_t high = quarter == 0   ? vshlq_n_u8(qh, 4)
                              : quarter == 1 ? vshlq_n_u8(qh, 2)
                              : quarter == 2 ? qh
                                             : vshrq_n_u8(qh, 2);
      return vreinterpretq_s8_u8(vorrq_u8(low, vandq_u8(high, vdupq_n_u8(0x30))));
    };
    q0 = code((quarter & 1) ? l1a : l0a, qha);
    q1 = code((quarter & 1) ? l1b : l0b, qhb);
  }
  // Elements 0..15 of group g take sub-block 2g's scale, 16..31 2g + 1's.
  static constexpr int scale0(int g) { return 2 * g; }
  static constexpr int scale1(int g) { return 2 * g + 1; }
  // Codes carry +32: lane m subtracts 32 * (scales[2m] * bsums[2m] +
  // scales[2m + 1] * bsums[2m + 1]).
  void finish(int32x4_t (&isum)[2], const std::byte* xb, float32x4_t (&code)[2], float32x4_t (&)[2]) const {
    const std::byte* bs = xb + offsetof(BlockQ8_K, bsums);
    const int16x8_t b_lo = qn_load_s16(bs), b_hi = qn_load_s16(bs + 16);
    const int32x4_t corr[2] = {
        vpaddq_s32(vmull_s16(vget_low_s16(b_lo), vget_low_s16(s_lo)), vmull_high_s16(b_lo, s_lo)),
        vpaddq_s32(vmull_s16(vget_low_s16(b_hi), vget_low_s16(s_hi)), vmull_high_s16(b_hi, s_hi))};
    for (int h = 0; h < 2; ++h) isum[h] = vsubq_s32(isum[h], vshlq_n_s32(corr[h], 5));
    qn_code_floats(isum, qn_f16(wb + offsetof(BlockQ6_K, d)) * load_field<float>(xb), code);
  }
};

// The row's result: code and min lanes added lane by lane (Q4_K, Q5_K), then
// the tree of k_lanes_total, ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
template <bool kMins>
inline float qn_k_total(const float32x4_t (&code)[2], const float32x4_t (&mn)[2]) {
  const float32x4_t lo = kMins ? vaddq_f32(code[0], mn[0]) : code[0];
  const float32x4_t hi = kMins ? vaddq_f32(code[1], mn[1]) : code[1];
  return qn_hsum(vaddq_f32(lo, hi));
}

// R activation rows against one weight row, each group's codes unpacked once
// for all of them. Every integer is exact (codes <= 63, activations in
// [-127, 127]), so the order of the integer steps is free.
template <std::size_t R, class Format>
void qn_k_dot(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  using Block = typename Format::BlockType;
  float32x4_t code[R][2], mn[R][2];
  for (std::size_t r = 0; r < R; ++r) code[r][0] = code[r][1] = mn[r][0] = mn[r][1] = vdupq_n_f32(0.0f);
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    Format f(w + b * sizeof(Block));
    const std::byte* xb = xq + b * sizeof(BlockQ8_K);
    const typename IntDots::Scales scales = IntDots::scales(f.s_lo, f.s_hi);
    int32x4_t isum[R][2];
    qn_for<R>([&](auto r) { isum[r][0] = isum[r][1] = vdupq_n_s32(0); });
    qn_for<8>([&](auto kc) {
      constexpr int k = decltype(kc)::value;
      int8x16_t q0, q1;
      f.template codes<k>(q0, q1);
      qn_for<R>([&](auto r) {
        const std::byte* xk = xb + r * x_stride + offsetof(BlockQ8_K, qs) + 32 * k;
        IntDots::template k_group<Format::scale0(k), Format::scale1(k)>(isum[r][0], isum[r][1], q0, q1,
                                                                         qn_load_s8(xk), qn_load_s8(xk + 16), scales);
      });
    });
    qn_for<R>([&](auto r) { f.finish(isum[r], xb + r * x_stride, code[r], mn[r]); });
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = qn_k_total<Format::kMins>(code[r], mn[r]);
}

template <class Format>
float qn_k_dot_one(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  qn_k_dot<1, Format>(w, xq, 0, n, &out);
  return out;
}

using QnKQ4 = QnKMin<BlockQ4_K, false>;
using QnKQ5 = QnKMin<BlockQ5_K, true>;

float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) { return qn_k_dot_one<QnKQ4>(w, xq, n); }
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) { return qn_k_dot_one<QnKQ5>(w, xq, n); }
float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) { return qn_k_dot_one<QnKQ6>(w, xq, n); }
void dot4_q4_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  qn_k_dot<4, QnKQ4>(w, xq, x_stride, n, out);
}
void dot4_q5_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  qn_k_dot<4, QnKQ5>(w, xq, x_stride, n, out);
}
void dot4_q6_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  qn_k_dot<4, QnKQ6>(w, xq, x_stride, n, out);
}

}  // namespace
}  // namespace clm
