// --kernels auto|scalar|avx2|avx512|avx512vnni: the SIMD path every kernel of
// the process runs, for the commands that compute (run, chat, serve, bench,
// eval). Forcing a narrower path than the CPU's widest measures or serves
// what an older CPU would compute, bit for bit (its cache entries carry that
// path's numerics, kernels/numerics.h). The path is set while the command
// line is parsed, before any engine or thread exists, so no kernel call ever
// sees two paths; a path the CPU lacks is an error, never a quiet fallback.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "kernels/cpu_features.h"

namespace clm {

void add_kernels_flag(CLI::App& cmd);

// What is wrong with a --kernels value on a CPU whose widest path is
// `widest` (it runs that path and every narrower one, as best_kernel_path
// decides); empty when the value is accepted. CLI11 puts the flag's name in
// front of it.
std::string kernels_flag_error(const std::string& value, KernelPath widest);

}  // namespace clm
