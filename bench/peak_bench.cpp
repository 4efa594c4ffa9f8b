#include "peak_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "kernels/peak_probe.h"
#include "util/thread_pool.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Iterations of `loop` that take about `millis` on one thread: doubled from a
// short run until one lasts a tenth of that, then scaled.
std::uint64_t calibrate(PeakLoop loop, int millis) {
  float sink = 0;
  std::uint64_t iterations = 1024;
  for (;;) {
    const auto t0 = Clock::now();
    loop(iterations, &sink);
    const double s = seconds_since(t0);
    if (s * 10000.0 >= millis || iterations >= (std::uint64_t{1} << 40))
      return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(iterations) * millis / 1000.0 / s));
    iterations *= 2;
  }
}

// All threads run `loop` together, released at once; the rate is every
// thread's operations over the time until the last one finished. Plain
// threads rather than the pool: each must run exactly one share, at once.
double rate_g_per_s(PeakLoop loop, std::uint64_t iterations, int n_threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> ops(static_cast<std::size_t>(n_threads), 0.0);
  std::vector<float> sinks(static_cast<std::size_t>(n_threads) * 16, 0.0f);  // a cache line each
  Clock::time_point t0;
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      ops[static_cast<std::size_t>(t)] = loop(iterations, &sinks[static_cast<std::size_t>(t) * 16]);
    });
  while (ready.load() < n_threads) std::this_thread::yield();
  t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  const double s = seconds_since(t0);
  double total = 0;
  for (double o : ops) total += o;
  return total / s / 1e9;
}

double best_rate(PeakLoop loop, const PeakBenchOptions& o, int n_threads) {
  const std::uint64_t iterations = calibrate(loop, o.millis);
  double best = 0;
  for (int r = 0; r < o.repetitions; ++r) best = std::max(best, rate_g_per_s(loop, iterations, n_threads));
  return best;
}

}  // namespace

Result<PeakBenchResult> run_peak_bench(const PeakBenchOptions& o) {
  if (o.millis < 1 || o.repetitions < 1) return fail("bench peak: --ms and --repetitions must be at least 1");
  PeakBenchResult r;
  const KernelPath path = active_kernel_path();
  const PeakLoops& loops = peak_loops(path);
  r.kernel_path = std::string(kernel_path_name(path));
  r.n_threads = o.n_threads > 0 ? o.n_threads : hardware_threads();
  r.fma_kind = std::string(loops.fma_kind);
  r.fma_gflops = best_rate(loops.fma_f32, o, r.n_threads);
  if (loops.dot_i8 != nullptr) {
    r.dot_kind = std::string(loops.dot_kind);
    r.dot_gops = best_rate(loops.dot_i8, o, r.n_threads);
  }
  return r;
}

nlohmann::json to_json(const PeakBenchOptions& o, const PeakBenchResult& r) {
  nlohmann::json j = {{"kernel_path", r.kernel_path}, {"threads", r.n_threads},      {"ms", o.millis},
                      {"repetitions", o.repetitions}, {"fma_f32_gflops", r.fma_gflops}, {"fma_kind", r.fma_kind}};
  if (!r.dot_kind.empty()) {
    j["dot_i8_gops"] = r.dot_gops;
    j["dot_i8_kind"] = r.dot_kind;
  }
  return j;
}

std::string to_markdown(const PeakBenchResult& r) {
  char line[512];
  std::string out = "| path | threads | f32 fma GFLOP/s | int8 dot GOP/s |\n|---|---:|---:|---:|\n";
  const std::string dot = r.dot_kind.empty() ? std::string("-")
                                             : std::to_string(static_cast<long long>(r.dot_gops + 0.5)) + " (" +
                                                   r.dot_kind + ")";
  std::snprintf(line, sizeof line, "| %s | %d | %.1f (%s) | %s |\n", r.kernel_path.c_str(), r.n_threads, r.fma_gflops,
                r.fma_kind.c_str(), dot.c_str());
  return out + line;
}

}  // namespace clm
