// The k-quant dots on 256-bit registers (the AVX2 path), following the
// canonical reduction of kquant_blocks.h: each 32 elements go through
// vpmaddubsw and a scale multiply-add straight into the 8 int32 lanes, the
// per-lane float steps are 8-lane fmas, and a row ends in one fixed horizontal
// sum. Included inside the source's target region after kquant_simd.h and
// after k_scaled_add256(acc, pairs, scales) (acc + the int16 pairs times
// scales, summed pairwise into int32).
#pragma once

namespace clm {
namespace {

// int16 lanes all equal to word w (0..7) of each 128-bit half of v.
inline __m256i k_word_splat(__m256i v, int w) {
  const __m256i pick = _mm256_set1_epi16(static_cast<int16_t>((2 * w) | ((2 * w + 1) << 8)));
  return _mm256_shuffle_epi8(v, pick);
}

// The per-format parts, constructed once per super-block. Each gives codes(k)
// and scales(k) for each 32-element group k in order (unsigned codes and the
// int16 multipliers of their maddubs pair sums), bsum_weights() (int16
// multipliers of the activation's 16 block sums) and d_dmin() (the block's
// d, and dmin where it has one, as floats).
template <class Block, bool kFifthBit>
struct KMin256 {
  using BlockType = Block;
  static constexpr bool kMins = true;
  const std::byte* wb;
  __m256i sc;        // sc[0..7] as int16 in both halves
  __m256i mins;      // m[0..7] as int16, each twice: weights of bsums 2j, 2j + 1
  __m256i qs, qh;
  explicit KMin256(const std::byte* block) : wb(block) {
    const __m128i sm = k_scales_mins(wb + offsetof(Block, scales));
    sc = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(sm, sm));
    mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    if constexpr (kFifthBit) qh = k256_load(wb + offsetof(BlockQ5_K, qh));
  }
  // Group k is sub-block k: the low nibbles of qs[32 (k / 2) ..] for even k,
  // the high ones for odd k.
  __m256i codes(int k) {
    const __m256i mask = _mm256_set1_epi8(15);
    if ((k & 1) == 0) qs = k256_load(wb + offsetof(Block, qs) + 32 * (k / 2));
    __m256i q = (k & 1) ? _mm256_and_si256(_mm256_srli_epi16(qs, 4), mask) : _mm256_and_si256(qs, mask);
    if constexpr (kFifthBit) {
      // Bit k of each qh byte moves to bit 4 of its own byte: a 16-bit shift
      // by at most 4 keeps that bit inside the byte.
      const __m256i sixteen = _mm256_set1_epi8(16);
      const __m256i bit = k < 4 ? _mm256_slli_epi16(qh, 4 - k) : _mm256_srli_epi16(qh, k - 4);
      q = _mm256_or_si256(q, _mm256_and_si256(bit, sixteen));
    }
    return q;
  }
  __m256i scales(int k) const { return k_word_splat(sc, k); }
  __m256i bsum_weights() const { return mins; }
  __m128 d_dmin() const { return k_f16_pair(wb + offsetof(Block, d)); }  // dmin follows d
};

struct KQ6_256 {
  using BlockType = BlockQ6_K;
  static constexpr bool kMins = false;
  const std::byte* wb;
  __m256i s_lo, s_hi;  // scales 0..7 / 8..15 as int16, in both halves
  __m256i s16;         // scales 0..15 as int16
  __m256i l0, l1, qh;
  explicit KQ6_256(const std::byte* block) : wb(block) {
    s16 = _mm256_cvtepi8_epi16(k128_load(wb + offsetof(BlockQ6_K, scales)));
    s_lo = _mm256_permute2x128_si256(s16, s16, 0x00);
    s_hi = _mm256_permute2x128_si256(s16, s16, 0x11);
  }
  // Group k = 4h + g of half h: ql[64h + 32 (g & 1) ..] nibble g >> 1, with
  // bits 2g, 2g + 1 of qh[32h ..] as its 16s and 32s.
  __m256i codes(int k) {
    const int h = k / 4, g = k % 4;
    if (g == 0) {
      l0 = k256_load(wb + offsetof(BlockQ6_K, ql) + 64 * h);
      l1 = k256_load(wb + offsetof(BlockQ6_K, ql) + 64 * h + 32);
      qh = k256_load(wb + offsetof(BlockQ6_K, qh) + 32 * h);
    }
    const __m256i l = (g & 1) ? l1 : l0;
    const __m256i low = _mm256_and_si256(g >= 2 ? _mm256_srli_epi16(l, 4) : l, _mm256_set1_epi8(15));
    // Bits 2g, 2g + 1 to bits 4, 5 of the same byte.
    const __m256i bits = g < 2 ? _mm256_slli_epi16(qh, 4 - 2 * g) : g == 2 ? qh : _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(low, _mm256_and_si256(bits, _mm256_set1_epi8(0x30)));
  }
  // Sub-blocks 2k (low half) and 2k + 1 (high half).
  __m256i scales(int k) const {
    const __m256i src = k < 4 ? s_lo : s_hi;
    const int w = (2 * k) % 8;
    const __m256i pick = _mm256_setr_epi8(
        static_cast<char>(2 * w), static_cast<char>(2 * w + 1), static_cast<char>(2 * w), static_cast<char>(2 * w + 1),
        static_cast<char>(2 * w), static_cast<char>(2 * w + 1), static_cast<char>(2 * w), static_cast<char>(2 * w + 1),
        static_cast<char>(2 * w), static_cast<char>(2 * w + 1), static_cast<char>(2 * w), static_cast<char>(2 * w + 1),
        static_cast<char>(2 * w), static_cast<char>(2 * w + 1), static_cast<char>(2 * w), static_cast<char>(2 * w + 1),
        static_cast<char>(2 * w + 2), static_cast<char>(2 * w + 3), static_cast<char>(2 * w + 2),
        static_cast<char>(2 * w + 3), static_cast<char>(2 * w + 2), static_cast<char>(2 * w + 3),
        static_cast<char>(2 * w + 2), static_cast<char>(2 * w + 3), static_cast<char>(2 * w + 2),
        static_cast<char>(2 * w + 3), static_cast<char>(2 * w + 2), static_cast<char>(2 * w + 3),
        static_cast<char>(2 * w + 2), static_cast<char>(2 * w + 3), static_cast<char>(2 * w + 2),
        static_cast<char>(2 * w + 3));
    return _mm256_shuffle_epi8(src, pick);
  }
  __m256i bsum_weights() const { return s16; }
  __m128 d_dmin() const { return k_f16_one(wb + offsetof(BlockQ6_K, d)); }
};

// R activation rows (x_stride bytes apart) against one weight row; each
// weight group is unpacked once for all of them. Codes are unsigned (at most
// 63) and activations in [-127, 127], so vpmaddubsw never saturates and every
// integer after it is exact; integer sums may go in any order. One row keeps
// two integer accumulators to halve the dependency chain.
template <std::size_t R, class Format>
void k_dot256(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  using Block = typename Format::BlockType;
  constexpr int kAccs = R == 1 ? 2 : 1;
  __m256 code[R], mins[R];
  for (std::size_t r = 0; r < R; ++r) code[r] = mins[r] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    Format f(w + b * sizeof(Block));
    const std::byte* xb = xq + b * sizeof(BlockQ8_K);
    __m256i acc[R][kAccs];
    for (std::size_t r = 0; r < R; ++r)
      for (int a = 0; a < kAccs; ++a) acc[r][a] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i q = f.codes(k);
      const __m256i s = f.scales(k);
      for (std::size_t r = 0; r < R; ++r) {
        const __m256i x = k256_load(xb + r * x_stride + offsetof(BlockQ8_K, qs) + 32 * k);
        acc[r][k % kAccs] = k_scaled_add256(acc[r][k % kAccs], _mm256_maddubs_epi16(q, x), s);
      }
    }
    const __m256i bw = f.bsum_weights();
    const __m128 dd = f.d_dmin();
    for (std::size_t r = 0; r < R; ++r) {
      __m256i isum = acc[r][0];
      if constexpr (kAccs == 2) isum = _mm256_add_epi32(isum, acc[r][1]);
      k_block_floats<Format::kMins>(isum, xb + r * x_stride, bw, dd, code[r], mins[r]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = k_row_total<Format::kMins>(code[r], mins[r]);
}

template <class Format>
float k_dot256_one(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot256<1, Format>(w, xq, 0, n, &out);
  return out;
}

using KQ4_256 = KMin256<BlockQ4_K, false>;
using KQ5_256 = KMin256<BlockQ5_K, true>;

// Plain functions defined inside the includer's target region, for its table.
float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot256_one<KQ4_256>(w, xq, n); }
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot256_one<KQ5_256>(w, xq, n); }
float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) { return k_dot256_one<KQ6_256>(w, xq, n); }
void dot4_q4_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot256<4, KQ4_256>(w, xq, x_stride, n, out);
}
void dot4_q5_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot256<4, KQ5_256>(w, xq, x_stride, n, out);
}
void dot4_q6_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot256<4, KQ6_256>(w, xq, x_stride, n, out);
}

}  // namespace
}  // namespace clm
