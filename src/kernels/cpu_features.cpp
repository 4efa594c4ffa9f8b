#include "kernels/cpu_features.h"

#include <atomic>

#if CLM_ARCH_X86_64
#include <cpuid.h>
#elif CLM_ARCH_AARCH64
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace clm {

namespace {
std::atomic<KernelPath>& active_path() {
  static std::atomic<KernelPath> path{best_kernel_path()};
  return path;
}

#if CLM_ARCH_X86_64
// F16C from CPUID (leaf 1, ECX): clang before 17 does not know "f16c" as a
// __builtin_cpu_supports feature. The AVX2 check beside it also confirms
// that the system saves the YMM registers.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool x86_supports(KernelPath p) {
  switch (p) {
    case KernelPath::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case KernelPath::Avx512:
      return x86_supports(KernelPath::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case KernelPath::Avx512Vnni: return x86_supports(KernelPath::Avx512) && __builtin_cpu_supports("avx512vnni");
    default: return false;
  }
}
#elif CLM_ARCH_AARCH64
// The kernel reports the CPU's features in the auxiliary vector (the
// `Features` line of /proc/cpuinfo: asimd, asimddp, ...).
bool aarch64_supports(KernelPath p) {
  const unsigned long hwcap = getauxval(AT_HWCAP);
  switch (p) {
    case KernelPath::Neon: return (hwcap & HWCAP_ASIMD) != 0;
    case KernelPath::NeonDot: return (hwcap & HWCAP_ASIMD) != 0 && (hwcap & HWCAP_ASIMDDP) != 0;
    default: return false;
  }
}
#endif
}  // namespace

bool kernel_path_supported(KernelPath p) {
  if (p == KernelPath::Scalar) return true;
#if CLM_ARCH_X86_64
  return x86_supports(p);
#elif CLM_ARCH_AARCH64
  return aarch64_supports(p);
#else
  return false;
#endif
}

KernelPath best_kernel_path() {
  static const KernelPath best = [] {
    for (KernelPath p : {KernelPath::Avx512Vnni, KernelPath::NeonDot})
      for (; p != KernelPath::Scalar; p = narrower_kernel_path(p))
        if (kernel_path_supported(p)) return p;
    return KernelPath::Scalar;
  }();
  return best;
}

KernelPath active_kernel_path() { return active_path().load(std::memory_order_relaxed); }

KernelPath narrower_kernel_path(KernelPath p) {
  switch (p) {
    case KernelPath::Avx512Vnni: return KernelPath::Avx512;
    case KernelPath::Avx512: return KernelPath::Avx2;
    case KernelPath::NeonDot: return KernelPath::Neon;
    case KernelPath::Avx2:
    case KernelPath::Neon:
    case KernelPath::Scalar: break;
  }
  return KernelPath::Scalar;
}

void set_kernel_path(KernelPath p) {
  while (!kernel_path_supported(p)) p = narrower_kernel_path(p);
  active_path().store(p, std::memory_order_relaxed);
}

std::string_view kernel_path_name(KernelPath p) {
  switch (p) {
    case KernelPath::Scalar: return "scalar";
    case KernelPath::Avx2: return "avx2";
    case KernelPath::Avx512: return "avx512";
    case KernelPath::Avx512Vnni: return "avx512vnni";
    case KernelPath::Neon: return "neon";
    case KernelPath::NeonDot: return "neondot";
  }
  return "unknown";
}

std::optional<KernelPath> parse_kernel_path(std::string_view name) {
  for (KernelPath p : kAllKernelPaths)
    if (kernel_path_name(p) == name) return p;
  return std::nullopt;
}

}  // namespace clm
