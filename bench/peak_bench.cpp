#include "peak_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
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

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One run with all threads released at once. `wall`: every thread's
// operations over the time until the last one finished, what the machine
// gave just now. `cpu`: each thread's operations over the CPU time it got,
// summed; on a machine shared with other work (or a hypervisor's other
// guests) that is still the rate of the cores themselves, as long as there
// are no more threads than cores. Plain threads rather than the pool: each
// must run exactly one share, at once.
struct Rates {
  double wall = 0, cpu = 0;
};

Rates run_threads(PeakLoop loop, std::uint64_t iterations, int n_threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> ops(static_cast<std::size_t>(n_threads), 0.0), cpu(ops.size(), 0.0);
  std::vector<float> sinks(static_cast<std::size_t>(n_threads) * 16, 0.0f);  // a cache line each
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      const auto i = static_cast<std::size_t>(t);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double c0 = thread_cpu_seconds();
      ops[i] = loop(iterations, &sinks[i * 16]);
      cpu[i] = thread_cpu_seconds() - c0;
    });
  while (ready.load() < n_threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  const double s = seconds_since(t0);
  Rates r;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    r.wall += ops[i] / s / 1e9;
    r.cpu += ops[i] / std::max(cpu[i], 1e-9) / 1e9;
  }
  return r;
}

Rates best_rates(PeakLoop loop, const PeakBenchOptions& o, int n_threads) {
  const std::uint64_t iterations = calibrate(loop, o.millis);
  Rates best;
  for (int r = 0; r < o.repetitions; ++r) {
    const Rates now = run_threads(loop, iterations, n_threads);
    best.wall = std::max(best.wall, now.wall);
    best.cpu = std::max(best.cpu, now.cpu);
  }
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
  const Rates fma = best_rates(loops.fma_f32, o, r.n_threads);
  r.fma_gflops = fma.cpu;
  r.fma_gflops_wall = fma.wall;
  if (loops.dot_i8 != nullptr) {
    r.dot_kind = std::string(loops.dot_kind);
    const Rates dot = best_rates(loops.dot_i8, o, r.n_threads);
    r.dot_gops = dot.cpu;
    r.dot_gops_wall = dot.wall;
  }
  return r;
}

nlohmann::json to_json(const PeakBenchOptions& o, const PeakBenchResult& r) {
  nlohmann::json j = {{"kernel_path", r.kernel_path}, {"threads", r.n_threads},      {"ms", o.millis},
                      {"repetitions", o.repetitions}, {"fma_f32_gflops", r.fma_gflops}, {"fma_kind", r.fma_kind},
                      {"fma_f32_gflops_wall", r.fma_gflops_wall}};
  if (!r.dot_kind.empty()) {
    j["dot_i8_gops"] = r.dot_gops;
    j["dot_i8_gops_wall"] = r.dot_gops_wall;
    j["dot_i8_kind"] = r.dot_kind;
  }
  return j;
}

std::string to_markdown(const PeakBenchOptions&, const PeakBenchResult& r) {
  char line[512];
  std::string out =
      "| path | threads | f32 fma GFLOP/s | (wall) | int8 dot GOP/s | (wall) |\n|---|---:|---:|---:|---:|---:|\n";
  std::string dot = "- | -";
  if (!r.dot_kind.empty()) {
    std::snprintf(line, sizeof line, "%.0f (%s) | %.0f", r.dot_gops, r.dot_kind.c_str(), r.dot_gops_wall);
    dot = line;
  }
  std::snprintf(line, sizeof line, "| %s | %d | %.1f (%s) | %.1f | %s |\n", r.kernel_path.c_str(), r.n_threads,
                r.fma_gflops, r.fma_kind.c_str(), r.fma_gflops_wall, dot.c_str());
  return out + line;
}

}  // namespace clm
