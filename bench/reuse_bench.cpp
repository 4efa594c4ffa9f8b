#include "reuse_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <utility>

#include "bench_requests.h"
#include "engine/engine.h"
#include "reuse_prompts.h"

namespace clm {

namespace {

struct Scenario {
  const char* name;
  const std::vector<int32_t>* prompt;
};

bool same_counts(const ReuseCounts& a, const ReuseCounts& b) {
  return a.prefix == b.prefix && a.shift == b.shift && a.recomputed == b.recomputed && a.computed == b.computed;
}

// One scenario: for each repetition and each mode in turn, empty the cache,
// make the base conversation resident (untimed), then time the changed
// prompt's first token.
Result<ReuseScenarioResult> run_scenario(Engine& engine, const ReuseBenchOptions& o, const std::vector<int32_t>& base,
                                         const Scenario& sc) {
  ReuseScenarioResult r;
  r.name = sc.name;
  r.prompt_tokens = static_cast<int>(sc.prompt->size());
  std::array<std::vector<double>, kBenchReuseModes.size()> ttft;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (std::size_t m = 0; m < kBenchReuseModes.size(); ++m) {
      ReuseModeRuns& runs = r.modes[m];
      runs.mode = kBenchReuseModes[m];
      // No scheduler loop runs, so this thread may touch the cache.
      engine.clear_cached();
      auto warm = generate_counted(engine, base, greedy_request(1, ReuseMode::Prefix), nullptr, "reuse");
      if (!warm) return std::unexpected(warm.error());
      std::vector<int32_t> tokens;
      auto b = generate_counted(engine, *sc.prompt, greedy_request(o.agree_tokens, runs.mode), &tokens, "reuse");
      if (!b) return std::unexpected(b.error());
      ttft[m].push_back(b->time_to_first_token_s);
      if (rep == 0) {
        runs.reuse = b->reuse;
        runs.greedy = std::move(tokens);
      } else if (!same_counts(runs.reuse, b->reuse)) {
        return fail(std::string("bench reuse: ") + sc.name + "/" + std::string(to_string(runs.mode)) +
                    ": the reuse counts changed between repetitions");
      }
    }
  }
  for (std::size_t m = 0; m < kBenchReuseModes.size(); ++m) {
    r.modes[m].ttft_s = summarize(ttft[m]);
    r.modes[m].agree_with_off = leading_agreement(r.modes[m].greedy, r.modes[0].greedy);
  }
  return r;
}

Result<std::unique_ptr<Engine>> make_engine(const ReuseBenchOptions& o, int longest_prompt) {
  EngineOptions eo = o.engine;
  eo.scheduler.max_running = 1;
  // The pool holds the cached conversation and the running changed prompt
  // side by side, so that nothing the plan could use is evicted.
  eo.scheduler.n_ctx = 2 * (longest_prompt + o.agree_tokens + 2 * o.engine.pool.block_size);
  eo.scheduler.reuse.mode = ReuseMode::Prefix;  // each request names its own mode
  eo.scheduler.reuse.lead = o.reuse_lead;
  return Engine::create(eo);
}

}  // namespace

const ReuseModeRuns& ReuseScenarioResult::mode(ReuseMode m) const {
  const auto at = std::find(kBenchReuseModes.begin(), kBenchReuseModes.end(), m) - kBenchReuseModes.begin();
  return modes[static_cast<std::size_t>(at)];
}

double ReuseScenarioResult::ratio_to_off(ReuseMode m) const {
  return mode(m).ttft_s.median / mode(ReuseMode::Off).ttft_s.median;
}

Result<ReuseBenchResult> run_reuse_bench(const ReuseBenchOptions& o) {
  if (o.repetitions < 1 || o.engine.pool.block_size < 1 || o.engine.scheduler.max_batch_tokens < 1 ||
      o.reuse_lead < 0 || o.agree_tokens < 1)
    return fail("bench reuse: repetitions, block size, batch and agreement tokens must be positive, the lead not negative");
  // The longest prompt is the one with text inserted.
  auto engine = make_engine(o, o.prompt_tokens + o.edit_tokens);
  if (!engine) return fail(engine.error().message);
  auto prompts = make_reuse_prompts((*engine)->model().tokenizer(), o.prompt_tokens, o.edit_tokens);
  if (!prompts) return std::unexpected(prompts.error());
  const std::array<Scenario, 3> scenarios = {
      {{"edit", &prompts->edit}, {"insert", &prompts->insert}, {"delete", &prompts->erase}}};

  ReuseBenchResult r;
  r.model = std::filesystem::path(o.engine.load.model_path).filename().string();  // no machine path in reports
  r.n_threads = static_cast<int>((*engine)->threads().size());
  r.insert_at = prompts->insert_at;
  for (const Scenario& sc : scenarios) {
    std::fprintf(stderr, "bench reuse: %s, %zu-token prompt against a cached %d-token conversation, %d repetitions\n",
                 sc.name, sc.prompt->size(), o.prompt_tokens, o.repetitions);
    auto s = run_scenario(**engine, o, prompts->base, sc);
    if (!s) return std::unexpected(s.error());
    r.scenarios.push_back(std::move(*s));
  }
  return r;
}

Status dump_reuse_prompts(const ReuseBenchOptions& o, const std::string& path) {
  auto model =
      Model::load(o.engine.load.model_path, LoadOptions{.load = FileLoad::Map, .on_progress = {}, .prefault = false});
  if (!model) return fail(model.error().message);
  auto prompts = make_reuse_prompts((*model)->tokenizer(), o.prompt_tokens, o.edit_tokens);
  if (!prompts) return std::unexpected(prompts.error());
  std::ofstream out(path);
  out << to_json(*prompts).dump() << "\n";
  if (!out) return fail("cannot write " + path);
  return {};
}

}  // namespace clm
