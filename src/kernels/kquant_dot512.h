// The k-quant dots on 512-bit registers, 64 elements a step, for the AVX-512
// sources: included inside their target regions after kquant_simd.h and after
// each defines k_scaled_add512(acc, pairs, scales), the 512-bit twin of
// kquant_dot256.h's k_scaled_add256. A step's low half holds one 32-element
// group and its high half the next, so after the four steps of a super-block
// the two halves add exactly into the 8 canonical lanes of kquant_blocks.h,
// and the float steps are the shared ones: results are bitwise those of every
// other path. Half the instructions per super-block of the 256-bit form (Zen 4
// executes a 512-bit operation as two 256-bit halves, but issues it as one),
// and the scales of both halves come from one in-lane shuffle.
#pragma once

namespace clm {
namespace {

inline __m512i k512_load(const std::byte* p) { return _mm512_loadu_si512(p); }
// The 32 bytes at p in both halves.
inline __m512i k512_twice(const std::byte* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
constexpr __mmask32 kHighHalf16 = 0xFFFF0000u;  // the int16 lanes of the high half

// int16 lanes: word a of each 128-bit lane in the low half, word b in the high.
inline __m512i k512_word_pick(__m512i v, int a, int b) {
  const __m512i lo = _mm512_set1_epi16(static_cast<int16_t>((2 * a) | ((2 * a + 1) << 8)));
  const __m512i hi = _mm512_set1_epi16(static_cast<int16_t>((2 * b) | ((2 * b + 1) << 8)));
  return _mm512_shuffle_epi8(v, _mm512_mask_blend_epi16(kHighHalf16, lo, hi));
}
// int16 lanes: word w + L of 128-bit lane L.
inline __m512i k512_word_walk(__m512i v, int w) {
  const auto pair = [](int x) { return static_cast<int16_t>((2 * x) | ((2 * x + 1) << 8)); };
  const __m512i pick = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_setr_m128i(_mm_set1_epi16(pair(w)), _mm_set1_epi16(pair(w + 1)))),
      _mm256_setr_m128i(_mm_set1_epi16(pair(w + 2)), _mm_set1_epi16(pair(w + 3))), 1);
  return _mm512_shuffle_epi8(v, pick);
}

// Step c covers sub-blocks 2c (low half: low nibbles of qs[32c ..]) and
// 2c + 1 (high half: the high nibbles of the same bytes).
template <class Block, bool kFifthBit>
struct KMin512 {
  using BlockType = Block;
  static constexpr bool kMins = true;
  const std::byte* wb;
  __m512i sc;    // sc[0..7] as int16 in every 128-bit lane
  __m256i mins;  // as in KMin256
  __m512i qh;    // Q5_K: qh in both halves, the high half shifted down by one bit
  explicit KMin512(const std::byte* block) : wb(block) {
    const __m128i sm = k_scales_mins(wb + offsetof(Block, scales));
    sc = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
    mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    if constexpr (kFifthBit) {
      const __m512i h = k512_twice(wb + offsetof(BlockQ5_K, qh));
      qh = _mm512_mask_srli_epi16(h, kHighHalf16, h, 1);
    }
  }
  __m512i codes(int c) const {
    const __m512i v = k512_twice(wb + offsetof(Block, qs) + 32 * c);
    __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(v, kHighHalf16, v, 4), _mm512_set1_epi8(15));
    if constexpr (kFifthBit) {
      // Bits 2c (low half) and 2c + 1 (high, already shifted) to bit 4 of the
      // same byte; q | (bits & 16) as one ternary-logic operation.
      const __m512i bits = c < 2 ? _mm512_slli_epi16(qh, 4 - 2 * c) : c == 2 ? qh : _mm512_srli_epi16(qh, 2);
      q = _mm512_ternarylogic_epi32(q, bits, _mm512_set1_epi8(16), 0xF8);
    }
    return q;
  }
  __m512i scales(int c) const { return k512_word_pick(sc, 2 * c, 2 * c + 1); }
  __m256i bsum_weights() const { return mins; }
  __m128 d_dmin() const { return k_f16_pair(wb + offsetof(Block, d)); }  // dmin follows d
};

// Step p covers elements 64p .. 64p + 63, quarters 2 (p % 2) and 2 (p % 2) + 1
// of half p / 2: the 64 bytes ql[64 (p / 2) ..], low nibbles for even p and
// high for odd, with bit pairs 4 (p % 2) (low half) and 4 (p % 2) + 2 (high
// half) of qh[32 (p / 2) ..].
struct KQ6_512 {
  using BlockType = BlockQ6_K;
  static constexpr bool kMins = false;
  const std::byte* wb;
  __m512i s_lo, s_hi;  // scales 0..7 / 8..15 as int16 in every 128-bit lane
  __m256i s16;
  __m512i ql, qh;
  explicit KQ6_512(const std::byte* block) : wb(block) {
    const __m128i s8 = k128_load(wb + offsetof(BlockQ6_K, scales));
    s16 = _mm256_cvtepi8_epi16(s8);
    s_lo = _mm512_broadcast_i32x4(_mm256_castsi256_si128(s16));
    s_hi = _mm512_broadcast_i32x4(_mm256_extracti128_si256(s16, 1));
  }
  __m512i codes(int p) {
    if (p % 2 == 0) {
      ql = k512_load(wb + offsetof(BlockQ6_K, ql) + 64 * (p / 2));
      const __m512i h = k512_twice(wb + offsetof(BlockQ6_K, qh) + 32 * (p / 2));
      qh = _mm512_mask_srli_epi16(h, kHighHalf16, h, 2);
    }
    const __m512i low = _mm512_and_si512(p % 2 ? _mm512_srli_epi16(ql, 4) : ql, _mm512_set1_epi8(15));
    const __m512i bits = p % 2 ? qh : _mm512_slli_epi16(qh, 4);  // bit pair to bits 4-5
    return _mm512_ternarylogic_epi32(low, bits, _mm512_set1_epi8(0x30), 0xF8);
  }
  // 16-element sub-blocks 4p .. 4p + 3, one per 128-bit lane.
  __m512i scales(int p) const { return k512_word_walk(p < 2 ? s_lo : s_hi, (4 * p) % 8); }
  __m256i bsum_weights() const { return s16; }
  __m128 d_dmin() const { return k_f16_one(wb + offsetof(BlockQ6_K, d)); }
};

// As k_dot256, four 64-element steps per super-block.
template <std::size_t R, class Format>
void k_dot512(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  using Block = typename Format::BlockType;
  constexpr int kAccs = R == 1 ? 2 : 1;
  __m256 code[R], mins[R];
  for (std::size_t r = 0; r < R; ++r) code[r] = mins[r] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    Format f(w + b * sizeof(Block));
    const std::byte* xb = xq + b * sizeof(BlockQ8_K);
    __m512i acc[R][kAccs];
    for (std::size_t r = 0; r < R; ++r)
      for (int a = 0; a < kAccs; ++a) acc[r][a] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i q = f.codes(c);
      const __m512i s = f.scales(c);
      for (std::size_t r = 0; r < R; ++r) {
        const __m512i x = k512_load(xb + r * x_stride + offsetof(BlockQ8_K, qs) + 64 * c);
        acc[r][c % kAccs] = k_scaled_add512(acc[r][c % kAccs], _mm512_maddubs_epi16(q, x), s);
      }
    }
    const __m256i bw = f.bsum_weights();
    const __m128 dd = f.d_dmin();
    for (std::size_t r = 0; r < R; ++r) {
      __m512i all = acc[r][0];
      if constexpr (kAccs == 2) all = _mm512_add_epi32(all, acc[r][1]);
      const __m256i isum = _mm256_add_epi32(_mm512_castsi512_si256(all), _mm512_extracti64x4_epi64(all, 1));
      k_block_floats<Format::kMins>(isum, xb + r * x_stride, bw, dd, code[r], mins[r]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = k_row_total<Format::kMins>(code[r], mins[r]);
}

template <class Format>
float k_dot512_one(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot512<1, Format>(w, xq, 0, n, &out);
  return out;
}

using KQ4_512 = KMin512<BlockQ4_K, false>;
using KQ5_512 = KMin512<BlockQ5_K, true>;

// Plain functions defined inside the includer's target region, for its table.
float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot512_one<KQ4_512>(w, xq, n); }
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot512_one<KQ5_512>(w, xq, n); }
float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot512_one<KQ6_512>(w, xq, n); }
void dot4_q4_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, KQ4_512>(w, xq, x_stride, n, out);
}
void dot4_q5_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, KQ5_512>(w, xq, x_stride, n, out);
}
void dot4_q6_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, KQ6_512>(w, xq, x_stride, n, out);
}

}  // namespace
}  // namespace clm
