// What collecting attention statistics (kv_view.h) costs a decode step: one
// token of a 110M-parameter llama-shaped synthetic model (Q8_0 weights, f16
// KV) over a filled context, with statistics off (0) and on (1), side by
// side: `build/clmcache_microbench --benchmark_filter=DecodeStep
// --benchmark_enable_random_interleaving=true`. One thread, so that the CPU
// column holds the whole step's work even on a machine others load.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <vector>

#include "cache/block_table.h"
#include "cache/kv_pool.h"
#include "model/model.h"
#include "model/synthetic_model.h"

namespace clm {
namespace {

// The model and a sequence of n_ctx tokens already prefilled, built once per context length.
struct DecodeRig {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvPool> pool;
  KvGeometry g;
  BlockTable table{32};
  ThreadPool threads{1};
  std::vector<float> mass, logits;
  std::vector<uint32_t> queries;
  int n_ctx = 0;

  explicit DecodeRig(int ctx) : n_ctx(ctx) {
    auto spec = synthetic_preset("110m");
    spec->weight_type = WeightType::Q8_0;
    const auto path = std::filesystem::temp_directory_path() / "clmcache_decode_stats_bench.gguf";
    if (!write_synthetic_model(*spec, path.string())) std::abort();
    auto m = Model::load(path.string());
    std::filesystem::remove(path);
    if (!m) std::abort();
    model = std::move(*m);
    const ModelConfig& c = model->config();
    g = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, 32, KvType::F16};
    auto p = KvPool::create(g, static_cast<std::size_t>(ctx / 32 + 2));
    if (!p) std::abort();
    pool = std::move(*p);
    if (!table.reserve(*pool, ctx + 1)) std::abort();
    Batch prefill;
    for (int i = 0; i < ctx; ++i) prefill.add(3 + i % 500, i, 0, table.append(3 + i % 500, i), false);
    const std::vector<KvSeqView> views{table.view()};
    if (!model->forward(prefill, KvView{g, views}, {}, threads)) std::abort();
    table.append(7, ctx);  // the decode token's slot
    mass.assign(static_cast<std::size_t>(ctx + 1), 0.0f);
    queries.assign(mass.size(), 0);
    logits.resize(static_cast<std::size_t>(c.n_vocab));
  }
  ~DecodeRig() { table.release(*pool); }

  void step(bool stats) {
    Batch b;
    b.add(7, n_ctx, 0, n_ctx, true);
    KvSeqView v = table.view();
    if (stats) {
      v.slot_mass = mass;
      v.slot_queries = queries;
    }
    const std::vector<KvSeqView> views{v};
    if (!model->forward(b, KvView{g, views}, logits, threads)) std::abort();
  }
};

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Each iteration runs one step without and one with statistics (the order
// alternating) and times both on the thread's CPU clock, so load from other
// processes, which comes and goes, falls on both alike. Reported: the
// median step of each and their ratio.
void BM_DecodeStep(benchmark::State& state) {
  static std::unique_ptr<DecodeRig> rig;
  if (!rig || rig->n_ctx != state.range(0)) rig = std::make_unique<DecodeRig>(static_cast<int>(state.range(0)));
  std::vector<double> off, on;
  bool stats_first = false;
  for (auto _ : state) {
    for (bool stats : {stats_first, !stats_first}) {
      const double t0 = thread_cpu_ms();
      rig->step(stats);
      (stats ? on : off).push_back(thread_cpu_ms() - t0);
      benchmark::DoNotOptimize(rig->logits.data());
    }
    stats_first = !stats_first;
  }
  state.counters["off_ms"] = median(off);
  state.counters["on_ms"] = median(on);
  state.counters["on/off"] = median(on) / median(off);
}
BENCHMARK(BM_DecodeStep)->ArgName("ctx")->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)->MinTime(5.0);

}  // namespace
}  // namespace clm
