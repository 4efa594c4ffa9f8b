// The Avx512Vnni path: the AVX-512 table with k-quant dots whose scale
// multiply-accumulate is one vpdpwssd instead of vpmaddwd + vpaddd. Compiled
// for those instructions by a target pragma and chosen only after
// cpu_features has confirmed AVX-512 VNNI.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kquant_blocks.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace clm {
namespace {
inline __m512i k_scaled_add512(__m512i acc, __m512i pairs, __m512i scales) { return _mm512_dpwssd_epi32(acc, pairs, scales); }
}  // namespace
}  // namespace clm

#include "kernels/kquant_simd.h"
#include "kernels/kquant_dot512.h"

#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace clm {

// Outside the target region: callable on any CPU, it only hands out addresses.
const VecKernels& avx512_vnni_vec_kernels() {
  static const VecKernels k = [] {
    VecKernels t = avx512_vec_kernels();
    t.dot_q4_k = dot_q4_k;
    t.dot_q5_k = dot_q5_k;
    t.dot_q6_k = dot_q6_k;
    t.dot4_q4_k = dot4_q4_k;
    t.dot4_q5_k = dot4_q5_k;
    t.dot4_q6_k = dot4_q6_k;
    return t;
  }();
  return k;
}

}  // namespace clm
