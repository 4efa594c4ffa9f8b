#include "kernels/cpu_features.h"

#include <cpuid.h>

#include <atomic>

namespace clm {

namespace {
std::atomic<KernelPath>& active_path() {
  static std::atomic<KernelPath> path{best_kernel_path()};
  return path;
}
// F16C from CPUID (leaf 1, ECX): clang before 17 does not know "f16c" as a
// __builtin_cpu_supports feature. The AVX2 check beside it also confirms
// that the system saves the YMM registers.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
}  // namespace

bool kernel_path_supported(KernelPath p) {
  switch (p) {
    case KernelPath::Scalar: return true;
    case KernelPath::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case KernelPath::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case KernelPath::Avx512Vnni:
      return kernel_path_supported(KernelPath::Avx512) && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

KernelPath best_kernel_path() {
  static const KernelPath best = [] {
    if (!kernel_path_supported(KernelPath::Avx2)) return KernelPath::Scalar;
    if (kernel_path_supported(KernelPath::Avx512Vnni)) return KernelPath::Avx512Vnni;
    if (kernel_path_supported(KernelPath::Avx512)) return KernelPath::Avx512;
    return KernelPath::Avx2;
  }();
  return best;
}

KernelPath active_kernel_path() { return active_path().load(std::memory_order_relaxed); }

void set_kernel_path(KernelPath p) {
  if (p == KernelPath::Avx512Vnni && !kernel_path_supported(p)) p = KernelPath::Avx512;
  if (p == KernelPath::Avx512 && !(kernel_path_supported(p) && kernel_path_supported(KernelPath::Avx2)))
    p = KernelPath::Avx2;
  if (p == KernelPath::Avx2 && !kernel_path_supported(p)) p = KernelPath::Scalar;
  active_path().store(p, std::memory_order_relaxed);
}

std::string_view kernel_path_name(KernelPath p) {
  switch (p) {
    case KernelPath::Scalar: return "scalar";
    case KernelPath::Avx2: return "avx2";
    case KernelPath::Avx512: return "avx512";
    case KernelPath::Avx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

std::optional<KernelPath> parse_kernel_path(std::string_view name) {
  for (KernelPath p : {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Avx512, KernelPath::Avx512Vnni})
    if (kernel_path_name(p) == name) return p;
  return std::nullopt;
}

}  // namespace clm
