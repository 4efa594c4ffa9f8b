// Which bits the kernels compute. Prefix mode promises that a cache hit never
// changes an output bit, which holds only where the K/V was computed by the
// same arithmetic: the same reduction order and roundings. The SIMD paths
// differ from each other in rounding (a float dot folds 8 lanes on AVX2, 16
// on AVX-512), and a change to a kernel's order changes its bits too. The
// cache keys therefore include a numerics id, so that K/V from other
// numerics (another machine's path through a shared Redis, an older clmcache
// through the disk tier) is a miss rather than a hit that changes the output.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/cpu_features.h"
#include "kernels/kv_type.h"

namespace clm {

// Bumped whenever any kernel's reduction order or rounding changes.
inline constexpr uint32_t kKernelNumericsVersion = 2;  // 2: F16/BF16 weights as one fma chain per output

// The paths that compute the same bits share a family: Avx512Vnni differs
// from Avx512 only in the route to exact integer sums.
std::string_view numerics_family(KernelPath p);

// Equal for two processes exactly when their kernels compute the same bits:
// the family and kKernelNumericsVersion.
uint64_t kernel_numerics_id(KernelPath p);

// The fingerprint cache keys and stored entries carry: the model's
// fingerprint (model/fingerprint.h) joined with the numerics id and the K/V
// types. Other types store other bytes for the same tokens, so a server with
// q8_0 K never finds an entry an f16 server wrote (and the reverse) under
// any block key, in RAM, on disk or in Redis.
uint64_t cache_fingerprint(uint64_t model_fingerprint, uint64_t numerics_id, KvTypes kv_types);

}  // namespace clm
