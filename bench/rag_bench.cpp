#include "rag_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <span>
#include <utility>

#include "bench_requests.h"
#include "engine/engine.h"
#include "rag_prompts.h"

namespace clm {

namespace {

GenerateOptions greedy(int max_tokens, ReuseMode mode, const BlendChoice& blend) {
  GenerateOptions g = greedy_request(max_tokens, mode);
  g.overrides.blend = blend;
  return g;
}

// Empties the cache and computes the system prompt and every chunk of the
// pool, each as its own request with no token generated: the chunks hold
// positions 0..C-1 and no BOS, the state a RAG server keeps per document.
// Mode off, so that each is computed whole and on its own.
Status warm(Engine& engine, const RagCorpus& corpus, const BlendChoice& blend) {
  // No scheduler loop runs, so this thread may touch the cache.
  engine.clear_cached();
  const GenerateOptions g = greedy(0, ReuseMode::Off, blend);
  if (auto s = generate_counted(engine, corpus.system, g, nullptr, "rag"); !s) return std::unexpected(s.error());
  for (const auto& chunk : corpus.chunks)
    if (auto s = generate_counted(engine, chunk, g, nullptr, "rag"); !s) return std::unexpected(s.error());
  return {};
}

void add(ReuseCounts& sum, const ReuseCounts& c) {
  sum.prefix += c.prefix;
  sum.shift += c.shift;
  sum.recomputed += c.recomputed;
  sum.computed += c.computed;
}

int round_up(int n, int block) { return (n + block - 1) / block * block; }

Result<std::unique_ptr<Engine>> make_engine(const RagBenchOptions& o) {
  EngineOptions eo = o.engine;
  eo.scheduler.max_running = 1;
  // The pool holds the system prompt and every chunk (each starts a block of
  // its own) beside the running request with its generated tokens, plus a
  // block of slack per drawn chunk, so that nothing a plan could use is
  // evicted. The pool is sized from n_ctx, which also caps one sequence far
  // above the request.
  const int request = o.system_tokens + o.chunks * o.chunk_tokens + o.question_tokens + o.agree_tokens;
  const int block = o.engine.pool.block_size;
  eo.scheduler.n_ctx = round_up(o.system_tokens, block) + o.pool * round_up(o.chunk_tokens, block) +
                       round_up(request, block) + (o.chunks + 1) * block;
  eo.scheduler.reuse.mode = ReuseMode::Prefix;  // each request names its own mode
  eo.scheduler.reuse.lead = o.reuse_lead;
  eo.scheduler.reuse.blend_ratio = o.blend.ratio;
  eo.scheduler.reuse.blend_adaptive = o.blend.adaptive;
  return Engine::create(eo);
}

}  // namespace

const RagModeRuns& RagBenchResult::mode(ReuseMode m) const {
  const auto at = std::find(kRagModes.begin(), kRagModes.end(), m) - kRagModes.begin();
  return modes[static_cast<std::size_t>(at)];
}

double RagBenchResult::ratio_to_off(ReuseMode m) const {
  return mode(m).ttft_s.median / mode(ReuseMode::Off).ttft_s.median;
}

double RagBenchResult::flops_share(ReuseMode m) const {
  return mode(m).prefill_flops / mode(ReuseMode::Off).prefill_flops;
}

Result<RagBenchResult> run_rag_bench(const RagBenchOptions& o) {
  if (o.repetitions < 1 || o.engine.pool.block_size < 1 || o.engine.scheduler.max_batch_tokens < 1 ||
      o.reuse_lead < 0 || o.agree_tokens < 1)
    return fail("bench rag: repetitions, block size, batch and agreement tokens must be positive, the lead not negative");
  if (!(o.blend.ratio >= 0.0f && o.blend.ratio <= 1.0f)) return fail("bench rag: --blend-ratio must be in [0, 1]");
  const RagPromptSizes sizes{.system_tokens = o.system_tokens,
                             .pool = o.pool,
                             .chunk_tokens = o.chunk_tokens,
                             .chunks = o.chunks,
                             .question_tokens = o.question_tokens};
  auto engine = make_engine(o);
  if (!engine) return fail(engine.error().message);
  Engine& e = **engine;
  auto corpus = make_rag_corpus(e.model().tokenizer(), sizes);
  if (!corpus) return std::unexpected(corpus.error());

  RagBenchResult r;
  r.model = std::filesystem::path(o.engine.load.model_path).filename().string();  // no machine path in reports
  r.n_threads = static_cast<int>(e.threads().size());
  r.warm_tokens = o.system_tokens + o.pool * o.chunk_tokens;
  std::array<std::vector<double>, kRagModes.size()> ttft;
  std::mt19937 rng(o.seed);
  for (int rep = 0; rep < o.repetitions; ++rep) {
    const RagRequest request = draw_rag_request(e.model().tokenizer(), *corpus, sizes, rep, rng);
    r.prompt_tokens = static_cast<int>(request.prompt.size());
    r.drawn.push_back(request.drawn);
    std::fprintf(stderr, "bench rag: request %d of %d, %d tokens, %d chunks of %d from a pool of %d\n", rep + 1,
                 o.repetitions, r.prompt_tokens, o.chunks, o.chunk_tokens, o.pool);
    std::vector<int32_t> off_tokens;
    for (std::size_t m = 0; m < kRagModes.size(); ++m) {
      RagModeRuns& runs = r.modes[m];
      runs.mode = kRagModes[m];
      // The previous mode's request left its own blocks behind (an exact
      // copy of this prompt, for modes off and prefix): start again from
      // the system prompt and the pool alone.
      if (auto ok = warm(e, *corpus, o.blend); !ok) return std::unexpected(ok.error());
      std::vector<int32_t> tokens;
      auto s =
          generate_counted(e, request.prompt, greedy(o.agree_tokens, runs.mode, o.blend), &tokens, "rag");
      if (!s) return std::unexpected(s.error());
      ttft[m].push_back(s->time_to_first_token_s);
      add(runs.reuse, s->reuse);
      runs.blend_probed += s->blend_probed;
      runs.prefill_flops += s->prefill_flops;
      if (runs.mode == ReuseMode::Off) off_tokens = tokens;
      const int agree = leading_agreement(tokens, off_tokens);
      runs.greedy_agree += agree;
      runs.first_token_agree += agree > 0 ? 1 : 0;
    }
  }
  for (std::size_t m = 0; m < kRagModes.size(); ++m) {
    r.modes[m].ttft_s = summarize(ttft[m]);
    r.modes[m].ttft_p90_s = percentile(ttft[m], 90.0);
  }
  return r;
}

}  // namespace clm
