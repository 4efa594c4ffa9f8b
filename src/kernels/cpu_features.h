// Which SIMD code path the kernels run. The path is chosen once per process
// (the widest the CPU supports) and never per call, so a result cannot depend
// on batch size through the path; tests may force a narrower path.
#pragma once

#include <array>
#include <optional>
#include <string_view>

// The instruction-set family this file is compiled for: the x86 paths'
// sources are built on x86-64 only, the NEON ones on AArch64 only
// (src/CMakeLists.txt), and the tables that name them are guarded by these.
#if defined(__x86_64__) || defined(_M_X64)
#define CLM_ARCH_X86_64 1
#elif defined(__aarch64__)
#define CLM_ARCH_AARCH64 1
#endif

namespace clm {

// Within a family, widest last. Avx512Vnni is Avx512 whose k-quant dots use
// VNNI, and NeonDot is Neon whose integer dots use SDOT (the dot-product
// extension, `asimddp`); each is a path of its own so that tests can run both
// on a CPU that has it. Scalar runs everywhere.
enum class KernelPath { Scalar, Avx2, Avx512, Avx512Vnni, Neon, NeonDot };
inline constexpr std::array kAllKernelPaths{KernelPath::Scalar, KernelPath::Avx2,  KernelPath::Avx512,
                                            KernelPath::Avx512Vnni, KernelPath::Neon, KernelPath::NeonDot};

// Avx2 needs AVX2+FMA+F16C; Avx512 also AVX-512 F+BW+VL; Avx512Vnni also
// VNNI. Neon needs AArch64's Advanced SIMD (every AArch64 Linux CPU has it);
// NeonDot also the dot-product instructions.
bool kernel_path_supported(KernelPath p);
// The widest supported path.
KernelPath best_kernel_path();
// The path every kernel call uses now; best_kernel_path() until changed.
KernelPath active_kernel_path();
// The next narrower path of p's family (Avx512Vnni -> Avx512 -> Avx2 ->
// Scalar, NeonDot -> Neon -> Scalar); Scalar for Scalar.
KernelPath narrower_kernel_path(KernelPath p);
// Forces a path for all later calls. An unsupported path falls back to the
// widest supported one narrower than it. Not meant to be called while other
// threads run kernels (they would mix paths within one batch).
void set_kernel_path(KernelPath p);
std::string_view kernel_path_name(KernelPath p);
// The path kernel_path_name calls `name`; nullopt for any other text.
std::optional<KernelPath> parse_kernel_path(std::string_view name);

}  // namespace clm
