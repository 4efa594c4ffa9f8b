// Pieces shared by the 256-bit and 512-bit k-quant dots (kquant_dot256.h,
// kquant_dot512.h): loads, the Q4_K/Q5_K scale unpacking, and the float steps
// of the canonical reduction of kquant_blocks.h on its 8 int32 lanes. Included
// inside each source's target region, so each gets a copy compiled for its
// own instructions.
#pragma once

namespace clm {
namespace {

inline __m256i k256_load(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i k128_load(const std::byte* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The 12 packed scale bytes of Q4_K/Q5_K as 16 bytes: sc[0..7], then m[0..7].
// Viewed as three little-endian words u0, u1, u2 (bytes 0-3, 4-7, 8-11):
// sc[0..3] = u0 & 0x3f.., m[0..3] = u1 & 0x3f.., sc[4..7] = (u2 & 0x0f..) |
// ((u0 >> 2) & 0x30..), m[4..7] = ((u2 >> 4) & 0x0f..) | ((u1 >> 2) & 0x30..);
// each mask keeps bits that stay inside their byte. Reads 16 bytes: the block
// goes on past its scales.
inline __m128i k_scales_mins(const std::byte* scales) {
  const __m128i v = k128_load(scales);
  const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));  // u0 u2 u1 u2
  const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));  // u0 u0 u1 u1
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

// The f16 pair at p ([d, dmin] of Q4_K/Q5_K) as floats in lanes 0 and 1; one
// f16 (Q6_K's d) in lane 0. F16C converts exactly, as f16_to_f32 does.
inline __m128 k_f16_pair(const std::byte* p) { return _mm_cvtph_ps(_mm_cvtsi32_si128(load_field<int32_t>(p))); }
inline __m128 k_f16_one(const std::byte* p) { return _mm_cvtph_ps(_mm_cvtsi32_si128(load_field<uint16_t>(p))); }

inline float k_hsum256_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The float steps of one super-block for one activation row xr, given its
// canonical code lanes isum and the block's [d, dmin]: the per-lane fmas, with
// the min lanes (Q4_K, Q5_K: bsums times the mins) or the -32 correction of
// Q6_K (bsums times the scales, which kMins = false folds into isum first).
// Each scale product rounds once, as in the scalar reference, and
// acc - a * b in one rounding (fnmadd) is exactly fma(-a, b, acc).
template <bool kMins>
inline void k_block_floats(__m256i isum, const std::byte* xr, __m256i bsum_weights, __m128 d_dmin, __m256& code,
                           __m256& mins) {
  const __m256i bs = _mm256_madd_epi16(k256_load(xr + offsetof(BlockQ8_K, bsums)), bsum_weights);
  const __m128 scaled = _mm_mul_ps(d_dmin, _mm_set1_ps(load_field<float>(xr)));  // d * xd, dmin * xd
  if constexpr (kMins)
    mins = _mm256_fnmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(scaled)), _mm256_cvtepi32_ps(bs), mins);
  else  // codes carry +32: subtract 32 * scale * block sum
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(bs, 5));
  code = _mm256_fmadd_ps(_mm256_broadcastss_ps(scaled), _mm256_cvtepi32_ps(isum), code);
}
// The row's result: code and min lanes added, then one fixed tree.
template <bool kMins>
inline float k_row_total(__m256 code, __m256 mins) {
  return k_hsum256_ps(kMins ? _mm256_add_ps(code, mins) : code);
}

}  // namespace
}  // namespace clm
