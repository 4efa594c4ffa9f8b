#include "app/kernels_flag.h"

#include <optional>
#include <string>

#include "kernels/cpu_features.h"

namespace clm {

namespace {

constexpr const char* kAuto = "auto";

std::optional<KernelPath> chosen_path(const std::string& value, KernelPath widest) {
  if (value == kAuto) return widest;
  return parse_kernel_path(value);
}

}  // namespace

std::string kernels_flag_error(const std::string& value, KernelPath widest) {
  const auto path = chosen_path(value, widest);
  if (!path) return "must be auto, scalar, avx2, avx512, avx512vnni, neon or neondot, not '" + value + "'";
  // A path is runnable when `widest` is it or falls back to it step by step
  // (KernelPath's families: each path needs what the narrower one needs).
  for (KernelPath p = widest;; p = narrower_kernel_path(p)) {
    if (p == *path) return {};
    if (p == KernelPath::Scalar) break;
  }
  return "this CPU cannot run the " + value + " kernels; its widest path is " + std::string(kernel_path_name(widest));
}

void add_kernels_flag(CLI::App& cmd) {
  cmd.add_option_function<std::string>(
         "--kernels",
         // The validator has accepted the value, so the path exists and the CPU runs it.
         [](const std::string& v) {
           const KernelPath widest = best_kernel_path();
           set_kernel_path(chosen_path(v, widest).value_or(widest));
         },
         "SIMD path of the kernels: auto (the CPU's widest), scalar, avx2, avx512 or avx512vnni (x86-64), "
         "neon or neondot (AArch64); a path the CPU lacks is an error")
      ->check(CLI::Validator([](const std::string& v) { return kernels_flag_error(v, best_kernel_path()); }, "PATH"))
      ->default_str(kAuto);
}

}  // namespace clm
