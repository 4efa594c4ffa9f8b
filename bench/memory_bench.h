// `clmcache bench memory`: the machine's memory-read bandwidth, the ceiling
// of decode speed (each generated token reads every weight once). Threads
// sum disjoint slices of a buffer much larger than the caches; the rate is
// bytes read over wall time, median of repetitions.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "util/error.h"

namespace clm {

struct MemoryBenchOptions {
  std::size_t size_mb = 1024;
  int n_threads = 0;  // 0: all hardware threads
  int repetitions = 10;
};

struct MemoryBenchResult {
  int n_threads = 0;
  Summary gb_per_s;
};

Result<MemoryBenchResult> run_memory_bench(const MemoryBenchOptions& options);
nlohmann::json to_json(const MemoryBenchOptions& options, const MemoryBenchResult& result);

}  // namespace clm
