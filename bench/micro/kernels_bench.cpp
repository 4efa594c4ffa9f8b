// Google Benchmark micro-benchmarks of the compute kernels, per weight type
// and per SIMD path: `build/clmcache_microbench [--benchmark_filter=...]`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/float_panels.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "kernels/rope_shift.h"
#include "kernels/vec_dot.h"
#include "util/half.h"
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
  std::optional<PanelBuffer> panels;  // F16 / BF16: packed once, as a loaded model's are
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
  if (uses_panels(type)) m.w.panels = m.panels.emplace(pack_panels(m.w)).data();
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
  for (WeightType t : {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0,
                       WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K})
    for (KernelPath p : kAllKernelPaths)
      for (int n : {1, 32, 64}) b->Args({static_cast<int64_t>(t), static_cast<int64_t>(p), n, 1});
}
BENCHMARK(BM_Matmul)->Apply(matmul_args)->Unit(benchmark::kMillisecond);

// One thread's k-quant kernel alone: a weight matrix of about 512 KiB (so it
// stays in L2 and the arithmetic, not memory, is timed) times range(3)
// activation rows, 1 (dot, decode) or 4 (dot4, prefill).
// args: weight type id, kernel path, columns, activation rows.
void BM_KQuantDot(benchmark::State& state) {
  const auto type = static_cast<WeightType>(state.range(0));
  const auto path = static_cast<KernelPath>(state.range(1));
  if (!kernel_path_supported(path)) {
    state.SkipWithError("kernel path not supported on this CPU");
    return;
  }
  const int cols = static_cast<int>(state.range(2));
  const int n = static_cast<int>(state.range(3));
  const int rows = static_cast<int>((512u << 10) / row_bytes(type, static_cast<std::size_t>(cols)));
  const Matrix m = make_matrix(type, rows, cols);
  const WeightType act = activation_type(type);
  const std::size_t q_stride = row_bytes(act, static_cast<std::size_t>(cols));
  const auto x = random_floats(static_cast<std::size_t>(n) * static_cast<std::size_t>(cols), 2);
  std::vector<std::byte> xq(q_stride * static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    quantize_row(act, x.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(cols),
                 xq.data() + static_cast<std::size_t>(r) * q_stride, static_cast<std::size_t>(cols));
  const VecKernels& k = vec_kernels(path);
  auto dot = type == WeightType::Q4_K ? k.dot_q4_k : type == WeightType::Q5_K ? k.dot_q5_k : k.dot_q6_k;
  auto dot4 = type == WeightType::Q4_K ? k.dot4_q4_k : type == WeightType::Q5_K ? k.dot4_q5_k : k.dot4_q6_k;
  std::vector<float> y(static_cast<std::size_t>(rows) * 4);
  for (auto _ : state) {
    for (int o = 0; o < rows; ++o) {
      const std::byte* wr = m.bytes.data() + static_cast<std::size_t>(o) * m.w.row_bytes;
      if (n == 4)
        dot4(wr, xq.data(), q_stride, static_cast<std::size_t>(cols), y.data() + 4 * o);
      else
        y[static_cast<std::size_t>(o)] = dot(wr, xq.data(), static_cast<std::size_t>(cols));
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double blocks = static_cast<double>(rows) * (cols / 256) * n;
  state.counters["ns/superblock"] = benchmark::Counter(blocks, benchmark::Counter::kIsIterationInvariantRate |
                                                                   benchmark::Counter::kInvert);
  state.SetLabel(std::string(weight_type_name(type)) + "/" + std::string(kernel_path_name(path)));
}

void kquant_dot_args(benchmark::internal::Benchmark* b) {
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K})
    for (KernelPath p : kAllKernelPaths)
      for (int cols : {2048, 5632})
        for (int n : {1, 4}) b->Args({static_cast<int64_t>(t), static_cast<int64_t>(p), cols, n});
}
BENCHMARK(BM_KQuantDot)->Apply(kquant_dot_args)->Unit(benchmark::kMicrosecond);

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
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * rows * cols, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
  state.SetLabel(std::string(weight_type_name(type)));
}
BENCHMARK(BM_MatmulShape)
    ->Args({static_cast<int64_t>(WeightType::F16), 1, 32000, 768})
    ->Args({static_cast<int64_t>(WeightType::F16), 1, 8192, 2048})
    ->Args({static_cast<int64_t>(WeightType::F16), 64, 2048, 768})
    ->Unit(benchmark::kMillisecond);

// Batches at the 1B shape (2048 wide, 5632 feed-forward), one thread: 8 to
// 64 rows are a decode step of many sequences, 512 a long prompt. GFLOP/s
// against `clmcache bench peak -t 1` is the share of the core a type's tile
// reaches at each batch size.
void BM_MatmulBatch(benchmark::State& state) { BM_MatmulShape(state); }
BENCHMARK(BM_MatmulBatch)
    ->ArgsProduct({{static_cast<int64_t>(WeightType::F32), static_cast<int64_t>(WeightType::F16),
                    static_cast<int64_t>(WeightType::BF16), static_cast<int64_t>(WeightType::Q8_0),
                    static_cast<int64_t>(WeightType::Q4_K)},
                   {8, 32, 64, 512},
                   {2048},
                   {2048}})
    ->ArgsProduct({{static_cast<int64_t>(WeightType::F16), static_cast<int64_t>(WeightType::Q8_0),
                    static_cast<int64_t>(WeightType::Q4_K)},
                   {512},
                   {5632},
                   {2048}})
    ->ArgsProduct({{static_cast<int64_t>(WeightType::F16), static_cast<int64_t>(WeightType::Q8_0),
                    static_cast<int64_t>(WeightType::Q4_K)},
                   {512},
                   {2048},
                   {5632}})
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

// Causal prefill attention of a range(0)-token prompt for one layer, as the
// model runs it: groups of kMaxGroupQueries consecutive tokens, every head,
// f16 cache, one thread. range(1): head dim (heads = 768 / head dim). range(2):
// kernel path. Reports query-slot pairs per second.
void BM_PrefillAttentionF16(benchmark::State& state) {
  const int n_ctx = static_cast<int>(state.range(0));
  const int hd = static_cast<int>(state.range(1));
  const auto path = static_cast<KernelPath>(state.range(2));
  if (!kernel_path_supported(path)) {
    state.SkipWithError("kernel path not supported on this CPU");
    return;
  }
  set_kernel_path(path);
  const int n_heads = 768 / hd;
  KvGeometry g{1, n_heads, hd, 32, KvType::F16};
  const int n_blocks = (n_ctx + g.block_size - 1) / g.block_size;
  std::vector<std::byte> arena(g.block_bytes() * static_cast<std::size_t>(n_blocks));
  std::vector<std::byte*> blocks;
  for (int b = 0; b < n_blocks; ++b) blocks.push_back(arena.data() + g.block_bytes() * static_cast<std::size_t>(b));
  const std::size_t row = static_cast<std::size_t>(n_heads) * static_cast<std::size_t>(hd);
  std::vector<int32_t> positions(static_cast<std::size_t>(n_ctx));
  for (int s = 0; s < n_ctx; ++s) {
    positions[static_cast<std::size_t>(s)] = s;
    const auto k = random_floats(row, 100 + static_cast<uint32_t>(s));
    const auto v = random_floats(row, 9000 + static_cast<uint32_t>(s));
    write_kv(k.data(), v.data(), g, 0, blocks[static_cast<std::size_t>(s / g.block_size)], s % g.block_size);
  }
  const auto q = random_floats(static_cast<std::size_t>(n_ctx) * row, 8);
  std::vector<float> out(q.size());
  std::vector<float> scratch(attend_group_scratch_floats(kMaxGroupQueries, n_ctx, hd));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (auto _ : state) {
    for (int t = 0; t < n_ctx; t += kMaxGroupQueries) {
      const int nq = std::min(kMaxGroupQueries, n_ctx - t);
      int32_t pos[kMaxGroupQueries];
      for (int i = 0; i < nq; ++i) pos[i] = t + i;
      for (int h = 0; h < n_heads; ++h)
        attend_paged_head_group(q.data() + static_cast<std::size_t>(t) * row, row, nq, n_heads, h, g, 0,
                                blocks.data(), positions.data(), n_ctx, pos, scale,
                                out.data() + static_cast<std::size_t>(t) * row, row, scratch.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double pairs = static_cast<double>(n_heads) * n_ctx * (n_ctx + 1) / 2.0;
  state.counters["pairs/s"] = benchmark::Counter(pairs, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(kernel_path_name(path)));
  set_kernel_path(best_kernel_path());
}
BENCHMARK(BM_PrefillAttentionF16)
    ->Args({512, 64, static_cast<int64_t>(KernelPath::Avx512)})
    ->Args({512, 128, static_cast<int64_t>(KernelPath::Avx512)})
    ->Args({512, 64, static_cast<int64_t>(KernelPath::Avx2)})
    ->Args({512, 64, static_cast<int64_t>(KernelPath::Neon)})
    ->Args({512, 64, static_cast<int64_t>(KernelPath::Scalar)})
    ->Unit(benchmark::kMillisecond);

// Re-rotating cached K by a position delta, as reusing a span at another
// position does: per call one kv head of one 32-token block (32 rows),
// out of place, f16; 8 heads per iteration (a 64 or 128 KiB working set that
// stays in L2). range(0): head dim (n_rot = head dim), range(1): kernel path,
// range(2): 1 for the NeoX layout. Reports rows and bytes (read + written)
// per second.
void BM_RopeShiftRows(benchmark::State& state) {
  const int hd = static_cast<int>(state.range(0));
  const auto path = static_cast<KernelPath>(state.range(1));
  if (!kernel_path_supported(path)) {
    state.SkipWithError("kernel path not supported on this CPU");
    return;
  }
  set_kernel_path(path);
  constexpr int kBlockRows = 32;
  constexpr int kHeads = 8;
  const RopeShiftParams params{hd, hd, 500000.0f, nullptr, state.range(2) != 0};
  const RopeShiftTable table = make_rope_shift_table(params, 1234);
  const std::size_t head_bytes = static_cast<std::size_t>(kBlockRows) * static_cast<std::size_t>(hd) * 2;
  const auto values = random_floats(static_cast<std::size_t>(kHeads * kBlockRows * hd), 6);
  std::vector<std::byte> src(head_bytes * kHeads), dst(src.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = f32_to_f16(values[i]);
    std::memcpy(src.data() + 2 * i, &h, 2);
  }
  for (auto _ : state) {
    for (int h = 0; h < kHeads; ++h)
      rope_shift_rows(src.data() + head_bytes * static_cast<std::size_t>(h),
                      dst.data() + head_bytes * static_cast<std::size_t>(h), KvType::F16, kBlockRows,
                      static_cast<std::size_t>(hd), params, table);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["rows/s"] = benchmark::Counter(kHeads * kBlockRows, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(2.0 * static_cast<double>(src.size()),
                                              benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(std::string(kernel_path_name(path)) + (params.neox ? "/neox" : "/adjacent"));
  set_kernel_path(best_kernel_path());
}

void rope_shift_args(benchmark::internal::Benchmark* b) {
  for (int hd : {64, 128})
    for (KernelPath p : {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Avx512, KernelPath::Neon})
      b->Args({hd, static_cast<int64_t>(p), 0});
  b->Args({128, static_cast<int64_t>(KernelPath::Avx2), 1});
  b->Args({128, static_cast<int64_t>(KernelPath::Avx512), 1});
}
BENCHMARK(BM_RopeShiftRows)->Apply(rope_shift_args)->Unit(benchmark::kMicrosecond);

// A short warm query over a long cache: range(0) new tokens after range(1)
// cached ones, as one group per kMaxGroupQueries tokens, 12 heads of 64, f16.
void BM_WarmQueryAttentionF16(benchmark::State& state) {
  const int n_new = static_cast<int>(state.range(0));
  const int n_ctx = n_new + static_cast<int>(state.range(1));
  constexpr int kHeads = 12, kHd = 64;
  KvGeometry g{1, kHeads, kHd, 32, KvType::F16};
  const int n_blocks = (n_ctx + g.block_size - 1) / g.block_size;
  std::vector<std::byte> arena(g.block_bytes() * static_cast<std::size_t>(n_blocks));
  std::vector<std::byte*> blocks;
  for (int b = 0; b < n_blocks; ++b) blocks.push_back(arena.data() + g.block_bytes() * static_cast<std::size_t>(b));
  constexpr std::size_t kRow = kHeads * kHd;
  std::vector<int32_t> positions(static_cast<std::size_t>(n_ctx));
  for (int s = 0; s < n_ctx; ++s) {
    positions[static_cast<std::size_t>(s)] = s;
    const auto kv = random_floats(kRow, 300 + static_cast<uint32_t>(s));
    write_kv(kv.data(), kv.data(), g, 0, blocks[static_cast<std::size_t>(s / g.block_size)], s % g.block_size);
  }
  const auto q = random_floats(static_cast<std::size_t>(n_new) * kRow, 8);
  std::vector<float> out(q.size());
  std::vector<float> scratch(attend_group_scratch_floats(kMaxGroupQueries, n_ctx, kHd));
  for (auto _ : state) {
    for (int t = 0; t < n_new; t += kMaxGroupQueries) {
      const int nq = std::min(kMaxGroupQueries, n_new - t);
      int32_t pos[kMaxGroupQueries];
      for (int i = 0; i < nq; ++i) pos[i] = n_ctx - n_new + t + i;
      for (int h = 0; h < kHeads; ++h)
        attend_paged_head_group(q.data() + static_cast<std::size_t>(t) * kRow, kRow, nq, kHeads, h, g, 0,
                                blocks.data(), positions.data(), n_ctx, pos, 0.125f,
                                out.data() + static_cast<std::size_t>(t) * kRow, kRow, scratch.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_WarmQueryAttentionF16)->Args({17, 871})->Unit(benchmark::kMicrosecond);

// Decode steps of range(0) conversations over one shared system prompt: a
// cascade of their queries over range(1) shared positions, then each over its
// own last block (24 positions), 12 heads of 64, f16, on path range(2).
void BM_CascadeDecodeAttentionF16(benchmark::State& state) {
  const int n_q = static_cast<int>(state.range(0));
  const int n_shared = static_cast<int>(state.range(1));
  const auto path = static_cast<KernelPath>(state.range(2));
  if (!kernel_path_supported(path)) {
    state.SkipWithError("kernel path not supported on this CPU");
    return;
  }
  set_kernel_path(path);
  constexpr int kHeads = 12, kHd = 64, kOwn = 24;
  KvGeometry g{1, kHeads, kHd, 32, KvType::F16};
  const int shared_blocks = n_shared / g.block_size;  // whole blocks: a prefix is shared by the block
  const int n_shared_slots = shared_blocks * g.block_size;
  const int n_slots = n_shared_slots + kOwn;
  const int n_blocks = shared_blocks + n_q;
  std::vector<std::byte> arena(g.block_bytes() * static_cast<std::size_t>(n_blocks));
  auto block = [&](int b) { return arena.data() + g.block_bytes() * static_cast<std::size_t>(b); };
  constexpr std::size_t kRow = kHeads * kHd;
  for (int b = 0; b < n_blocks; ++b)
    for (int r = 0; r < g.block_size; ++r) {
      const auto kv = random_floats(kRow, 500 + static_cast<uint32_t>(b * g.block_size + r));
      write_kv(kv.data(), kv.data(), g, 0, block(b), r);
    }
  std::vector<std::vector<std::byte*>> tables(static_cast<std::size_t>(n_q));
  std::vector<int32_t> positions(static_cast<std::size_t>(n_slots));
  for (int s = 0; s < n_slots; ++s) positions[static_cast<std::size_t>(s)] = s;
  const auto q = random_floats(static_cast<std::size_t>(n_q) * kRow, 9);
  std::vector<float> out(q.size());
  std::vector<CascadeQuery> queries;
  for (int i = 0; i < n_q; ++i) {
    auto& t = tables[static_cast<std::size_t>(i)];
    for (int b = 0; b < shared_blocks; ++b) t.push_back(block(b));
    t.push_back(block(shared_blocks + i));
    const std::size_t at = static_cast<std::size_t>(i) * kRow;
    queries.push_back({q.data() + at, out.data() + at, t.data(), positions.data(), n_slots, n_slots - 1});
  }
  std::vector<float> scratch(attend_group_scratch_floats(n_q, n_slots, kHd));
  for (auto _ : state) {
    for (int h = 0; h < kHeads; ++h)
      attend_paged_head_cascade(queries.data(), n_q, n_shared_slots, kHeads, h, g, 0, 0.125f, scratch.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["query-positions/s"] = benchmark::Counter(static_cast<double>(n_q) * n_slots * kHeads,
                                                           benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(kernel_path_name(path)));
  set_kernel_path(best_kernel_path());
}
BENCHMARK(BM_CascadeDecodeAttentionF16)
    ->Args({32, 1000, static_cast<int64_t>(KernelPath::Scalar)})
    ->Args({32, 1000, static_cast<int64_t>(KernelPath::Avx2)})
    ->Args({32, 1000, static_cast<int64_t>(KernelPath::Avx512)})
    ->Args({8, 1000, static_cast<int64_t>(KernelPath::Avx512)})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace clm

BENCHMARK_MAIN();
