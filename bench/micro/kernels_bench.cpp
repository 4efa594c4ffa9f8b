// Google Benchmark micro-benchmarks of the compute kernels, per weight type
// and per SIMD path: `build/clmcache_microbench [--benchmark_filter=...]`.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "util/thread_pool.h"

namespace clm {
namespace {

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Matrix {
  std::vector<std::byte> bytes;
  WeightMatrix w;
};

Matrix make_matrix(WeightType type, int rows, int cols) {
  Matrix m;
  const std::size_t rb = row_bytes(type, static_cast<std::size_t>(cols));
  m.bytes.resize(rb * static_cast<std::size_t>(rows));
  const auto values = random_floats(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols), 1);
  for (int r = 0; r < rows; ++r)
    quantize_row(type, values.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(cols),
                 m.bytes.data() + static_cast<std::size_t>(r) * rb, static_cast<std::size_t>(cols));
  m.w = WeightMatrix{type, m.bytes.data(), rows, cols, rb};
  return m;
}

// args: weight type id, kernel path, batch rows, threads. 4096 x 4096 weights.
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<WeightType>(state.range(0));
  const auto path = static_cast<KernelPath>(state.range(1));
  if (!kernel_path_supported(path)) {
    state.SkipWithError("kernel path not supported on this CPU");
    return;
  }
  set_kernel_path(path);
  const int n = static_cast<int>(state.range(2));
  ThreadPool pool(static_cast<int>(state.range(3)));
  constexpr int kDim = 4096;
  const Matrix m = make_matrix(type, kDim, kDim);
  const auto x = random_floats(static_cast<std::size_t>(n) * kDim, 2);
  std::vector<float> y(static_cast<std::size_t>(n) * kDim);
  for (auto _ : state) {
    matmul(m.w, x.data(), n, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kDim * kDim * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
  state.counters["GB/s(weights)"] = benchmark::Counter(static_cast<double>(m.bytes.size()),
                                                       benchmark::Counter::kIsIterationInvariantRate,
                                                       benchmark::Counter::kIs1000);
  state.SetLabel(std::string(weight_type_name(type)) + "/" + std::string(kernel_path_name(path)));
  set_kernel_path(best_kernel_path());
}

void matmul_args(benchmark::internal::Benchmark* b) {
  for (WeightType t : {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0})
    for (KernelPath p : {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Avx512})
      for (int n : {1, 32, 64}) b->Args({static_cast<int64_t>(t), static_cast<int64_t>(p), n, 1});
}
BENCHMARK(BM_Matmul)->Apply(matmul_args)->Unit(benchmark::kMillisecond);

// args: weight type id, batch rows, weight rows, weight columns; best path,
// one thread. The shapes of small models, whose short rows (768 columns are
// 24 cache lines of f16) stream from memory differently from 4096-column ones.
void BM_MatmulShape(benchmark::State& state) {
  const auto type = static_cast<WeightType>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const int rows = static_cast<int>(state.range(2)), cols = static_cast<int>(state.range(3));
  ThreadPool pool(1);
  const Matrix m = make_matrix(type, rows, cols);
  const auto x = random_floats(static_cast<std::size_t>(n) * static_cast<std::size_t>(cols), 2);
  std::vector<float> y(static_cast<std::size_t>(n) * static_cast<std::size_t>(rows));
  for (auto _ : state) {
    matmul(m.w, x.data(), n, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s(weights)"] = benchmark::Counter(static_cast<double>(m.bytes.size()),
                                                       benchmark::Counter::kIsIterationInvariantRate,
                                                       benchmark::Counter::kIs1000);
  state.SetLabel(std::string(weight_type_name(type)));
}
BENCHMARK(BM_MatmulShape)
    ->Args({static_cast<int64_t>(WeightType::F16), 1, 32000, 768})
    ->Args({static_cast<int64_t>(WeightType::F16), 1, 8192, 2048})
    ->Args({static_cast<int64_t>(WeightType::F16), 64, 2048, 768})
    ->Unit(benchmark::kMillisecond);

void BM_RmsNorm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto x = random_floats(static_cast<std::size_t>(n), 3), w = random_floats(static_cast<std::size_t>(n), 4);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto _ : state) {
    rmsnorm(x.data(), w.data(), n, 1e-5f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_RmsNorm)->Arg(4096);

void BM_Rope(benchmark::State& state) {
  auto q = random_floats(32 * 128, 5);
  int pos = 0;
  for (auto _ : state) {
    rope(q.data(), 32, 128, 128, pos++ % 4096, 10000.0f, nullptr, false);
    benchmark::DoNotOptimize(q.data());
  }
}
BENCHMARK(BM_Rope);

void BM_Softmax(benchmark::State& state) {
  auto x = random_floats(static_cast<std::size_t>(state.range(0)), 6);
  for (auto _ : state) {
    auto y = x;
    softmax(y.data(), static_cast<int>(y.size()));
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_Softmax)->Arg(32000);

// One decode query over a context of range(0) tokens: 32 heads, 8 KV heads, head dim 128, f16 cache.
void BM_AttentionF16(benchmark::State& state) {
  const int n_ctx = static_cast<int>(state.range(0));
  KvGeometry g{1, 8, 128, 32, KvType::F16};
  const int n_blocks = (n_ctx + g.block_size - 1) / g.block_size;
  std::vector<std::byte> arena(g.block_bytes() * static_cast<std::size_t>(n_blocks));
  std::vector<std::byte*> blocks;
  for (int b = 0; b < n_blocks; ++b) blocks.push_back(arena.data() + g.block_bytes() * static_cast<std::size_t>(b));
  const auto kv = random_floats(8 * 128, 7);
  std::vector<int32_t> positions(static_cast<std::size_t>(n_ctx));
  for (int s = 0; s < n_ctx; ++s) {
    positions[static_cast<std::size_t>(s)] = s;
    write_kv(kv.data(), kv.data(), g, 0, blocks[static_cast<std::size_t>(s / g.block_size)], s % g.block_size);
  }
  const auto q = random_floats(32 * 128, 8);
  std::vector<float> out(32 * 128), scratch(static_cast<std::size_t>(n_ctx) + 128);
  for (auto _ : state) {
    attend_paged(q.data(), 32, g, 0, blocks.data(), positions.data(), n_ctx, n_ctx, 0.088f, out.data(),
                 scratch.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_AttentionF16)->Arg(512)->Arg(4096);

}  // namespace
}  // namespace clm

BENCHMARK_MAIN();
