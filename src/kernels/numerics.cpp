#include "kernels/numerics.h"

#include <xxhash.h>

#include <string>

namespace clm {

std::string_view numerics_family(KernelPath p) {
  switch (p) {
    // The scalar code of another architecture is another compiler's code
    // generation over another libm, so it is not assumed to match bitwise.
#if CLM_ARCH_AARCH64
    case KernelPath::Scalar: return "scalar-aarch64";
#else
    case KernelPath::Scalar: return "scalar";
#endif
    case KernelPath::Avx2: return "avx2";
    case KernelPath::Avx512:
    case KernelPath::Avx512Vnni: return "avx512";
    case KernelPath::Neon:
    case KernelPath::NeonDot: return "neon";
  }
  return "unknown";
}

uint64_t kernel_numerics_id(KernelPath p) {
  const std::string id = std::string(numerics_family(p)) + "/" + std::to_string(kKernelNumericsVersion);
  return XXH3_64bits(id.data(), id.size());
}

uint64_t cache_fingerprint(uint64_t model_fingerprint, uint64_t numerics_id, KvTypes kv_types) {
  const uint64_t parts[3] = {model_fingerprint, numerics_id,
                             static_cast<uint64_t>(kv_types.k) << 8 | static_cast<uint64_t>(kv_types.v)};
  return XXH3_64bits(parts, sizeof parts);
}

}  // namespace clm
