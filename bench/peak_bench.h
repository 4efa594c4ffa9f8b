// `clmcache bench peak`: the arithmetic ceiling of this CPU for the path the
// kernels run (kernels/peak_probe.h): f32 fma GFLOP/s and, where the path has
// one, byte dot-product GOP/s, with n threads each running the loop at once.
// Prefill is compute-bound, so its FLOP rate over this is its efficiency.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace clm {

struct PeakBenchOptions {
  int n_threads = 0;  // 0: all hardware threads
  int millis = 300;   // length of one measured run of each loop
  int repetitions = 3;
};

struct PeakBenchResult {
  std::string kernel_path;
  int n_threads = 0;
  std::string fma_kind;
  // Best of the repetitions, all threads together, over the CPU time the
  // threads got (the cores' own rate) and over wall time (what a shared
  // machine gave this run).
  double fma_gflops = 0, fma_gflops_wall = 0;
  std::string dot_kind;  // empty where the path has no byte dot product
  double dot_gops = 0, dot_gops_wall = 0;
};

Result<PeakBenchResult> run_peak_bench(const PeakBenchOptions& options);
nlohmann::json to_json(const PeakBenchOptions& options, const PeakBenchResult& result);
std::string to_markdown(const PeakBenchOptions& options, const PeakBenchResult& result);

}  // namespace clm
