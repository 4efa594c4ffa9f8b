// The AVX-512 k-quant dots, 64 elements a step, shared by the Avx512 and
// Avx512Vnni paths. Included only by their two sources, inside their target
// regions and after each defines scaled_add(acc, pairs, scales) (acc + the
// int16 pairs times scales, summed pairwise into int32), so each gets its own
// copy compiled for its own instructions. Integer sums are exact and the
// float steps those of kquant_blocks.h, so results equal the scalar path's.
#pragma once

namespace clm {
namespace {

inline int32_t k_hsum256(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}
inline int32_t k_hsum512(__m512i v) {
  return k_hsum256(_mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}
inline __m512i k_join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m512i k_join16(int16_t lo, int16_t hi) { return k_join(_mm256_set1_epi16(lo), _mm256_set1_epi16(hi)); }
inline __m256i k_load256(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// q[k]: unsigned codes of elements 64k .. 64k + 63; scale[k]: the int16
// multipliers of their maddubs pair sums; bsum_weights: the int16 multipliers
// of the activations' 16 block sums (mins of Q4_K/Q5_K, scales of Q6_K).
struct UnpackedK512 {
  __m512i q[4];
  __m512i scale[4];
  __m256i bsum_weights;
  float d, dmin;
};

template <class Block>
void unpack_k_min512(const std::byte* wb, UnpackedK512& u) {
  u.d = f16_to_f32(load_field<uint16_t>(wb + offsetof(Block, d)));
  u.dmin = f16_to_f32(load_field<uint16_t>(wb + offsetof(Block, dmin)));
  uint8_t sc[8], mn[8];
  unpack_k_scales(reinterpret_cast<const uint8_t*>(wb + offsetof(Block, scales)), sc, mn);
  // Each 32-byte run of qs is read into both halves of a register; the high
  // half shifts down by 4, so the halves are sub-blocks 2c and 2c + 1.
  const __m512i mask = _mm512_set1_epi8(15);
  const __m512i nibble_shift = k_join(_mm256_set1_epi16(0), _mm256_set1_epi16(4));
  const __m128i sc16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
  const __m512i sc512 = _mm512_castsi128_si512(sc16);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = k_load256(wb + offsetof(Block, qs) + 32 * c);
    u.q[c] = _mm512_and_si512(_mm512_srlv_epi16(k_join(v, v), nibble_shift), mask);
    u.scale[c] = _mm512_permutexvar_epi16(k_join(_mm256_set1_epi16(static_cast<int16_t>(2 * c)),
                                                 _mm256_set1_epi16(static_cast<int16_t>(2 * c + 1))),
                                          sc512);
  }
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn)));
  u.bsum_weights = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
}

void unpack_q4_k512(const std::byte* wb, UnpackedK512& u) { unpack_k_min512<BlockQ4_K>(wb, u); }

void unpack_q5_k512(const std::byte* wb, UnpackedK512& u) {
  unpack_k_min512<BlockQ5_K>(wb, u);
  const __m256i qh = k_load256(wb + offsetof(BlockQ5_K, qh));
  const __m256i one = _mm256_set1_epi8(1);
  // Bit j of each qh byte is the 16s bit of sub-block j (see the AVX2 path).
  for (int c = 0; c < 4; ++c) {
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
    u.q[c] = _mm512_or_si512(u.q[c], _mm512_slli_epi16(k_join(lo, hi), 4));
  }
}

void unpack_q6_k512(const std::byte* wb, UnpackedK512& u) {
  u.d = f16_to_f32(load_field<uint16_t>(wb + offsetof(BlockQ6_K, d)));
  u.dmin = 0.0f;
  const auto* sc = reinterpret_cast<const int8_t*>(wb + offsetof(BlockQ6_K, scales));
  const __m512i mask = _mm512_set1_epi8(15), three = _mm512_set1_epi8(3);
  // Per 16-bit lane shift counts: the low half of a step takes one 2-bit field
  // of qh, the high half the next.
  const __m512i shift_a = k_join(_mm256_set1_epi16(0), _mm256_set1_epi16(2));
  const __m512i shift_b = k_join(_mm256_set1_epi16(4), _mm256_set1_epi16(6));
  for (int h = 0; h < 2; ++h) {
    // ql[64h .. 64h + 63] low nibbles are elements 0..63 of the half, high nibbles 64..127.
    const __m512i ql = _mm512_loadu_si512(wb + offsetof(BlockQ6_K, ql) + 64 * h);
    const __m256i qh256 = k_load256(wb + offsetof(BlockQ6_K, qh) + 32 * h);
    const __m512i qh = k_join(qh256, qh256);
    auto high = [&](__m512i shift) {
      return _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift), three), 4);
    };
    u.q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, mask), high(shift_a));
    u.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), mask), high(shift_b));
  }
  for (int k = 0; k < 4; ++k) {
    const int8_t* s = sc + 4 * k;  // step k covers sub-blocks 4k .. 4k + 3 of 16
    u.scale[k] = k_join(_mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0])),
                        _mm256_set_m128i(_mm_set1_epi16(s[3]), _mm_set1_epi16(s[2])));
  }
  u.bsum_weights = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
}

template <std::size_t R, class Block, bool kMins, class Unpack>
void k_dot512(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out,
              Unpack unpack) {
  float sum[R] = {};
  UnpackedK512 u;
  for (std::size_t b = 0; b < n / kSuperBlockElems; ++b) {
    unpack(w + b * sizeof(Block), u);
    for (std::size_t r = 0; r < R; ++r) {
      const std::byte* xb = xq + r * x_stride + b * sizeof(BlockQ8_K);
      const std::byte* xv = xb + offsetof(BlockQ8_K, qs);
      __m512i acc = _mm512_setzero_si512();
      for (int k = 0; k < 4; ++k)
        acc = scaled_add(acc, _mm512_maddubs_epi16(u.q[k], _mm512_loadu_si512(xv + 64 * k)), u.scale[k]);
      const __m256i bs = _mm256_madd_epi16(k_load256(xb + offsetof(BlockQ8_K, bsums)), u.bsum_weights);
      const float xd = load_field<float>(xb);
      if constexpr (kMins)
        sum[r] = accumulate_k_min(sum[r], u.d, u.dmin, xd, k_hsum512(acc), k_hsum256(bs));
      else  // codes carry +32: subtract 32 * scale * block sum
        sum[r] = accumulate_k_sym(sum[r], u.d, xd, k_hsum512(acc) - 32 * k_hsum256(bs));
    }
  }
  for (std::size_t r = 0; r < R; ++r) out[r] = sum[r];
}

float dot_q4_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot512<1, BlockQ4_K, true>(w, xq, 0, n, &out, unpack_q4_k512);
  return out;
}
float dot_q5_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot512<1, BlockQ5_K, true>(w, xq, 0, n, &out, unpack_q5_k512);
  return out;
}
float dot_q6_k(const std::byte* w, const std::byte* xq, std::size_t n) {
  float out;
  k_dot512<1, BlockQ6_K, false>(w, xq, 0, n, &out, unpack_q6_k512);
  return out;
}
void dot4_q4_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, BlockQ4_K, true>(w, xq, x_stride, n, out, unpack_q4_k512);
}
void dot4_q5_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, BlockQ5_K, true>(w, xq, x_stride, n, out, unpack_q5_k512);
}
void dot4_q6_k(const std::byte* w, const std::byte* xq, std::size_t x_stride, std::size_t n, float* out) {
  k_dot512<4, BlockQ6_K, false>(w, xq, x_stride, n, out, unpack_q6_k512);
}

}  // namespace
}  // namespace clm
