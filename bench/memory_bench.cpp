#include "memory_bench.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/huge_page_region.h"
#include "util/thread_pool.h"

namespace clm {

namespace {

// Wide independent accumulators let the compiler vectorise the loop so the
// measurement is limited by memory, not by one add chain.
uint64_t sum_words(const uint64_t* p, std::size_t n) {
  uint64_t acc[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + static_cast<std::size_t>(k)];
  for (; i < n; ++i) acc[0] += p[i];
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

}  // namespace

Result<MemoryBenchResult> run_memory_bench(const MemoryBenchOptions& o) {
  const std::size_t words = (o.size_mb << 20) / sizeof(uint64_t);
  // The same kind of memory the weights are copied into by default.
  auto region = HugePageRegion::allocate(words * sizeof(uint64_t));
  if (!region) return fail("bench memory: " + region.error().message);
  auto* buffer = reinterpret_cast<uint64_t*>(region->data());
  for (std::size_t i = 0; i < words; ++i) buffer[i] = i;  // touch every page
  ThreadPool pool(o.n_threads > 0 ? o.n_threads : hardware_threads());
  std::vector<double> rates;
  volatile uint64_t sink = 0;
  for (int r = -1; r < o.repetitions; ++r) {
    // Many parts, claimed by whichever thread is free (see ThreadPool), so a
    // thread that starts late does not leave the others idle at the end.
    const std::size_t parts = 64 * static_cast<std::size_t>(pool.size());
    std::vector<uint64_t> partial(parts * 8, 0);
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(parts, [&](std::size_t b, std::size_t e) {
      for (std::size_t part = b; part < e; ++part) {
        const std::size_t lo = words * part / parts, hi = words * (part + 1) / parts;
        partial[part * 8] = sum_words(buffer + lo, hi - lo);
      }
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t p = 0; p < parts; ++p) sink = sink + partial[p * 8];
    if (r >= 0) rates.push_back(static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
  }
  return MemoryBenchResult{pool.size(), summarize(rates)};
}

nlohmann::json to_json(const MemoryBenchOptions& o, const MemoryBenchResult& r) {
  return {{"size_mb", o.size_mb},
          {"threads", r.n_threads},
          {"repetitions", o.repetitions},
          {"read_gb_per_s", {{"median", r.gb_per_s.median}, {"stddev", r.gb_per_s.stddev},
                             {"min", r.gb_per_s.min}, {"max", r.gb_per_s.max}}}};
}

}  // namespace clm
