#include "model_bench.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "cache/block_table.h"
#include "cache/kv_pool.h"
#include "kernels/cpu_features.h"
#include "model/model.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

// Runs token batches on one sequence of the pool. The depth (the tokens
// already in the cache) is computed once: each timed run gets a table over
// the same blocks that lists those slots as filled and appends its own tokens
// after them, overwriting what the run before wrote there.
class Runner {
 public:
  Runner(Model& model, KvPool& pool, ThreadPool& threads)
      : model_(model), pool_(pool), threads_(threads), depth_(pool.geometry().block_size) {}
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  ~Runner() { depth_.release(pool_); }

  // Computes `context` (in prefill batches, not timed) with room for `room`
  // more tokens after it.
  Status prepare(const std::vector<int32_t>& context, int room) {
    depth_.release(pool_);
    context_ = context;
    if (auto ok = depth_.reserve(pool_, static_cast<int>(context.size()) + room); !ok) return ok;
    return run(depth_, context, 0, kContextBatch);
  }

  // Seconds to run `tokens` after the prepared context, `per_call` tokens per
  // forward call.
  Result<double> time(const std::vector<int32_t>& tokens, int per_call) {
    BlockTable table(pool_.geometry().block_size);
    const KvSeqView prepared = depth_.view();
    for (std::size_t b = 0; b < depth_.blocks().size(); ++b) table.push_block(depth_.blocks()[b], prepared.blocks[b]);
    for (std::size_t i = 0; i < context_.size(); ++i) table.append(context_[i], static_cast<int32_t>(i));
    const auto t0 = Clock::now();
    if (auto ok = run(table, tokens, static_cast<int32_t>(context_.size()), per_call); !ok)
      return std::unexpected(ok.error());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }  // `table` borrows depth_'s blocks: it is dropped, never released

 private:
  // Tokens per forward call of the untimed context: a server's prefill batch.
  static constexpr int kContextBatch = 512;

  Status run(BlockTable& table, const std::vector<int32_t>& tokens, int32_t first_pos, int per_call) {
    std::vector<float> logits(static_cast<std::size_t>(model_.config().n_vocab));
    Batch batch;
    for (std::size_t begin = 0; begin < tokens.size(); begin += static_cast<std::size_t>(per_call)) {
      const std::size_t end = std::min(tokens.size(), begin + static_cast<std::size_t>(per_call));
      batch.clear();
      for (std::size_t i = begin; i < end; ++i) {
        const auto pos = first_pos + static_cast<int32_t>(i);
        batch.add(tokens[i], pos, 0, table.append(tokens[i], pos), i + 1 == end);
      }
      const KvSeqView seq = table.view();
      if (auto ok = model_.forward(batch, KvView{pool_.geometry(), {&seq, 1}}, logits, threads_); !ok) return ok;
    }
    return {};
  }

  Model& model_;
  KvPool& pool_;
  ThreadPool& threads_;
  BlockTable depth_;
  std::vector<int32_t> context_;
};

std::vector<int32_t> random_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  return t;
}

Result<Summary> measure(Runner& runner, const std::vector<int32_t>& context, const std::vector<int32_t>& tokens,
                        int per_call, int reps) {
  if (auto ok = runner.prepare(context, static_cast<int>(tokens.size())); !ok) return std::unexpected(ok.error());
  std::vector<double> rates;
  for (int r = -1; r < reps; ++r) {  // r == -1: warm-up, not recorded
    auto s = runner.time(tokens, per_call);
    if (!s) return std::unexpected(s.error());
    if (r >= 0) rates.push_back(static_cast<double>(tokens.size()) / *s);
  }
  return summarize(rates);
}

FileLoad load_of(const ModelBenchOptions& o) { return o.mmap ? FileLoad::Map : FileLoad::Copy; }

}  // namespace

Result<ModelBenchResult> run_model_bench(const ModelBenchOptions& o) {
  if (o.n_prompt < 0 || o.n_gen < 0 || o.depth < 0 || o.repetitions < 1)
    return fail("bench: -p, -n and -d must be >= 0 and -r >= 1");
  LoadOptions load;
  // As run and serve load: one copy of the F16 / BF16 weights, their panels.
  load.release_packed_file_bytes = true;
  load.load = load_of(o);
  auto model = Model::load(o.model_path, load);
  if (!model) return fail(model.error().message);
  const ModelConfig& c = (*model)->config();
  for (const KvType t : {o.kv_types.k, o.kv_types.v})
    if (const std::string why = kv_type_unsupported(t, c.head_dim); !why.empty())
      return fail("bench: KV type " + std::string(kv_type_name(t)) + ": " + why);
  KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, 32, o.kv_types};
  const int n_tokens = o.depth + std::max(o.n_prompt, o.n_gen);
  auto pool = KvPool::create(g, static_cast<std::size_t>((n_tokens + g.block_size - 1) / g.block_size + 1));
  if (!pool) return fail(pool.error().message);
  ThreadPool threads(o.n_threads > 0 ? o.n_threads : hardware_threads());
  Runner runner(**model, **pool, threads);

  ModelBenchResult r;
  r.model = o.model_path;
  r.kernel_path = std::string(kernel_path_name(active_kernel_path()));
  r.n_threads = threads.size();
  r.weight_bytes = (*model)->weight_bytes();
  for (const auto& t : (*model)->file().tensors()) r.parameters += t.n_elements;
  const std::vector<int32_t> context = random_tokens(o.depth, c.n_vocab, 3);
  if (o.n_prompt > 0) {
    auto s = measure(runner, context, random_tokens(o.n_prompt, c.n_vocab, 1), o.n_prompt, o.repetitions);
    if (!s) return fail(s.error().message);
    r.pp_tokens_per_s = *s;
  }
  if (o.n_gen > 0) {
    auto s = measure(runner, context, random_tokens(o.n_gen, c.n_vocab, 2), 1, o.repetitions);
    if (!s) return fail(s.error().message);
    r.tg_tokens_per_s = *s;
  }
  return r;
}

nlohmann::json to_json(const ModelBenchOptions& o, const ModelBenchResult& r) {
  auto summary = [](const Summary& s) {
    return nlohmann::json{{"median", s.median}, {"mean", s.mean}, {"stddev", s.stddev},
                          {"min", s.min},       {"max", s.max},   {"n", s.n}};
  };
  nlohmann::json j = {{"model", r.model},          {"kernel_path", r.kernel_path}, {"threads", r.n_threads},
                      {"weights", file_load_name(load_of(o))},
                      {"weight_bytes", r.weight_bytes}, {"parameters", r.parameters}, {"repetitions", o.repetitions},
                      {"depth", o.depth},
                      {"cache_type_k", std::string(kv_type_name(o.kv_types.k))},
                      {"cache_type_v", std::string(kv_type_name(o.kv_types.v))}};
  if (o.n_prompt > 0) j["pp"] = {{"tokens", o.n_prompt}, {"tokens_per_second", summary(r.pp_tokens_per_s)}};
  if (o.n_gen > 0) j["tg"] = {{"tokens", o.n_gen}, {"tokens_per_second", summary(r.tg_tokens_per_s)}};
  return j;
}

std::string to_markdown(const ModelBenchOptions& o, const ModelBenchResult& r) {
  std::string out =
      "| model | size | params | kernels | threads | weights | kv | test | t/s |\n|---|---:|---:|---|---:|---|---|---|---:|\n";
  const std::string weights(file_load_name(load_of(o)));
  char row[512];
  auto add = [&](const std::string& test, const Summary& s) {
    std::snprintf(row, sizeof row, "| %s | %.2f MiB | %.2f M | %s | %d | %s | %s | %s | %.2f ± %.2f |\n",
                  r.model.c_str(), static_cast<double>(r.weight_bytes) / (1024.0 * 1024.0),
                  static_cast<double>(r.parameters) / 1e6, r.kernel_path.c_str(), r.n_threads, weights.c_str(),
                  kv_types_text(o.kv_types).c_str(), test.c_str(), s.median, s.stddev);
    out += row;
  };
  // llama-bench's names: "tg32 @ d4096" for a run after 4096 tokens.
  const std::string at = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
  if (o.n_prompt > 0) add("pp" + std::to_string(o.n_prompt) + at, r.pp_tokens_per_s);
  if (o.n_gen > 0) add("tg" + std::to_string(o.n_gen) + at, r.tg_tokens_per_s);
  return out;
}

}  // namespace clm
