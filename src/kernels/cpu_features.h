// Which SIMD code path the kernels run. The path is chosen once per process
// (the widest the CPU supports) and never per call, so a result cannot depend
// on batch size through the path; tests may force a narrower path.
#pragma once

#include <optional>
#include <string_view>

namespace clm {

// Widest last. Avx512Vnni is Avx512 whose k-quant dots use VNNI; it is a
// path of its own so that tests can run both on a CPU that has it.
enum class KernelPath { Scalar, Avx2, Avx512, Avx512Vnni };

// Avx2 needs AVX2+FMA+F16C; Avx512 needs AVX-512 F+BW+VL; Avx512Vnni also VNNI.
bool kernel_path_supported(KernelPath p);
// The widest supported path.
KernelPath best_kernel_path();
// The path every kernel call uses now; best_kernel_path() until changed.
KernelPath active_kernel_path();
// Forces a path for all later calls. An unsupported path falls back to the
// widest supported one narrower than it. Not meant to be called while other
// threads run kernels (they would mix paths within one batch).
void set_kernel_path(KernelPath p);
std::string_view kernel_path_name(KernelPath p);
// The path kernel_path_name calls `name`; nullopt for any other text.
std::optional<KernelPath> parse_kernel_path(std::string_view name);

}  // namespace clm
