// `clmcache bench ...`: end-to-end benchmarks (the measuring lives in bench/).
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "app/kernels_flag.h"
#include "app/kv_type_flags.h"
#include "app/model_source.h"
#include "dialogue_bench.h"
#include "dialogue_scaling.h"
#include "longchat_bench.h"
#include "memory_bench.h"
#include "model/synthetic_model.h"
#include "model_bench.h"
#include "peak_bench.h"
#include "rag_bench.h"
#include "restore_bench.h"
#include "reuse_bench.h"

namespace clm {

namespace {

struct ModelBenchFlags {
  ModelBenchOptions options;
  std::string format = "md";
};

int bench_model(ModelBenchFlags& f) {
  std::fprintf(stderr, "bench model: %s, pp%d, tg%d, %d repetitions\n", f.options.model_path.c_str(),
               f.options.n_prompt, f.options.n_gen, f.options.repetitions);
  auto r = run_model_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  if (f.format == "json") {
    std::cout << to_json(f.options, *r).dump(2) << "\n";
  } else {
    std::cout << to_markdown(f.options, *r);
  }
  return 0;
}

struct DialogueBenchFlags {
  DialogueBenchOptions options;
  std::string format = "md";
  std::string json_path;       // also write the JSON here
  std::vector<int> scaling;    // session counts: run the scaling table instead
};

// The default model of the dialogue and reuse benchmarks: a synthetic llama
// of about 110M parameters in Q8_0, written once into the user's cache
// directory.
Result<std::string> default_bench_model() {
  const std::string path = user_cache_dir() + "/models/synthetic-110m-q8_0.gguf";
  if (std::filesystem::exists(path)) return path;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return fail("cannot create " + path + ": " + ec.message());
  auto spec = synthetic_preset("110m");
  if (!spec) return fail(spec.error().message);
  spec->weight_type = WeightType::Q8_0;
  std::fprintf(stderr, "writing the synthetic 110M benchmark model to %s\n", path.c_str());
  if (auto ok = write_synthetic_model(*spec, path); !ok) return fail(ok.error().message);
  return path;
}

// Prints the results (Markdown or JSON) and also writes the JSON to
// json_path if one is given.
template <class Options, class Results>
int report(const Options& options, const Results& results, const std::string& format, const std::string& json_path) {
  if (format == "json")
    std::cout << to_json(options, results).dump(2) << "\n";
  else
    std::cout << to_markdown(options, results);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(options, results).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "clmcache: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

// The engine flags of the benchmarks that build their own engine or
// scheduler (dialogue, longchat, reuse, rag, restore): the same names, checks
// and help in each; the benchmark sets the rest of `o` itself.
void add_bench_engine_flags(CLI::App& cmd, EngineOptions& o,
                            const std::string& block_size_help = "tokens per KV block") {
  cmd.add_option("-m,--model", o.load.model_path, "GGUF model (default: a synthetic 110M Q8_0 llama)");
  cmd.add_option("-t,--threads", o.load.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  cmd.add_option("--block-size", o.pool.block_size, block_size_help)->check(CLI::Range(1, 4096));
  cmd.add_option("--batch", o.scheduler.max_batch_tokens, "tokens per forward call")->check(CLI::Range(1, 1 << 16));
}

// Fills an empty model path with the default benchmark model.
bool resolve_bench_model(std::string& model_path) {
  if (!model_path.empty()) return true;
  auto path = default_bench_model();
  if (!path) {
    std::fprintf(stderr, "clmcache: %s\n", path.error().message.c_str());
    return false;
  }
  model_path = *path;
  return true;
}

int bench_dialogue(DialogueBenchFlags& f) {
  if (!resolve_bench_model(f.options.engine.load.model_path)) return 1;
  if (!f.scaling.empty()) {
    auto r = run_dialogue_scaling(f.options, f.scaling);
    if (!r) {
      std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
      return 1;
    }
    return report(f.options, *r, f.format, f.json_path);
  }
  auto r = run_dialogue_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  return report(f.options, *r, f.format, f.json_path);
}

struct LongchatBenchFlags {
  LongchatBenchOptions options;
  std::string format = "md";
  std::string json_path;  // also write the JSON here
};

// Prints the report; fails (after it) when the bounded run broke its bound
// or a conversation fell short of its target: what the benchmark asserts.
int bench_longchat(LongchatBenchFlags& f) {
  if (!resolve_bench_model(f.options.engine.load.model_path)) return 1;
  auto r = run_longchat_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  if (const int rc = report(f.options, *r, f.format, f.json_path); rc != 0) return rc;
  if (!r->within_bound()) {
    std::fprintf(stderr, "clmcache: bench longchat: peak KV %zu blocks, over the bound of %zu\n", r->bounded.peak_blocks,
                 r->bound_blocks);
    return 1;
  }
  if (r->bounded_reached < f.options.sessions || r->unbounded_reached < f.options.sessions) {
    std::fprintf(stderr,
                 "clmcache: bench longchat: %d bounded and %d unbounded of %d conversations reached %d tokens\n",
                 r->bounded_reached, r->unbounded_reached, f.options.sessions, r->target_tokens);
    return 1;
  }
  return 0;
}

struct ReuseBenchFlags {
  ReuseBenchOptions options;
  std::string format = "md";
  std::string json_path;    // also write the JSON here
  std::string dump_prompts;  // write the prompts here instead of measuring
};

int bench_reuse(ReuseBenchFlags& f) {
  if (!resolve_bench_model(f.options.engine.load.model_path)) return 1;
  if (!f.dump_prompts.empty()) {
    if (auto ok = dump_reuse_prompts(f.options, f.dump_prompts); !ok) {
      std::fprintf(stderr, "clmcache: %s\n", ok.error().message.c_str());
      return 1;
    }
    return 0;
  }
  auto r = run_reuse_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  return report(f.options, *r, f.format, f.json_path);
}

struct RagBenchFlags {
  RagBenchOptions options;
  std::string blend_ratio;  // a share in [0, 1] or "auto"; empty: the engine's default
  std::string format = "md";
  std::string json_path;  // also write the JSON here
};

int bench_rag(RagBenchFlags& f) {
  if (!f.blend_ratio.empty()) {
    const auto choice = parse_blend_ratio(f.blend_ratio);
    if (!choice) {
      std::fprintf(stderr, "clmcache: --blend-ratio must be a number in [0, 1] or auto, not '%s'\n",
                   f.blend_ratio.c_str());
      return 1;
    }
    f.options.blend = *choice;
  }
  if (!resolve_bench_model(f.options.engine.load.model_path)) return 1;
  auto r = run_rag_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  return report(f.options, *r, f.format, f.json_path);
}

struct RestoreBenchFlags {
  RestoreBenchOptions options;
  std::string format = "md";
  std::string json_path;    // also write the JSON here
  std::string write_redis;  // run as part (b)'s other server: write the prefix to this Redis, measure nothing
  bool no_redis = false;
};

int bench_restore(RestoreBenchFlags& f) {
  if (!resolve_bench_model(f.options.engine.load.model_path)) return 1;
  if (!f.write_redis.empty()) {
    if (auto ok = run_restore_writer(f.options, f.write_redis); !ok) {
      std::fprintf(stderr, "clmcache: %s\n", ok.error().message.c_str());
      return 1;
    }
    return 0;
  }
  std::error_code ec;
  f.options.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    std::fprintf(stderr, "clmcache: bench restore: cannot find its own executable: %s\n", ec.message().c_str());
    return 1;
  }
  f.options.redis = !f.no_redis;
  auto r = run_restore_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  return report(f.options, *r, f.format, f.json_path);
}

struct PeakBenchFlags {
  PeakBenchOptions options;
  std::string json_path;  // also write the JSON here
};

int bench_peak(const PeakBenchFlags& f) {
  auto r = run_peak_bench(f.options);
  if (!r) {
    std::fprintf(stderr, "clmcache: %s\n", r.error().message.c_str());
    return 1;
  }
  return report(f.options, *r, "md", f.json_path);
}

}  // namespace

void register_bench_command(CLI::App& app, int& exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: model speed (pp/tg), and cache reuse scenarios");
  bench->require_subcommand(1);

  auto mf = std::make_shared<ModelBenchFlags>();
  CLI::App* model = bench->add_subcommand("model", "prompt processing and generation speed, like llama-bench");
  model->add_option("-m,--model", mf->options.model_path, "GGUF model file")->required();
  model->add_option("-p,--n-prompt", mf->options.n_prompt, "prompt tokens per pp run (0: skip pp)")
      ->check(CLI::Range(0, 1 << 16));
  model->add_option("-n,--n-gen", mf->options.n_gen, "generated tokens per tg run (0: skip tg)")
      ->check(CLI::Range(0, 1 << 16));
  model->add_option("-d,--depth", mf->options.depth,
                    "tokens already in the cache before each pp and tg run, computed first and not timed "
                    "(llama-bench's -d)")
      ->check(CLI::Range(0, 1 << 20));
  model->add_option("-t,--threads", mf->options.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  model->add_option("-r,--repetitions", mf->options.repetitions, "measured runs per test, after one warm-up")
      ->check(CLI::Range(1, 1000));
  model->add_option("-o,--output", mf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  add_kv_type_flags(*model, mf->options.kv_types);
  model->add_flag("--mmap", mf->options.mmap, "use the weights in place from the file map (like llama-bench -mmp 1)");
  model->callback([mf, &exit_code] { exit_code = bench_model(*mf); });

  auto df = std::make_shared<DialogueBenchFlags>();
  DialogueBenchOptions& d = df->options;
  CLI::App* dialogue = bench->add_subcommand("dialogue", "prefix-cache reuse in conversations: TTFT and shared KV memory");
  add_bench_engine_flags(*dialogue, d.engine);
  dialogue->add_option("--history", d.history_tokens, "(a) history tokens")->check(CLI::Range(1, 1 << 20));
  dialogue->add_option("--question", d.question_tokens, "(a) question tokens")->check(CLI::Range(1, 1 << 20));
  dialogue->add_option("-r,--repetitions", d.repetitions, "(a) cold/warm pairs")->check(CLI::Range(1, 1000));
  dialogue->add_option("--sessions", d.sessions, "(b) concurrent sessions")->check(CLI::Range(1, 4096));
  dialogue->add_option("--system-tokens", d.system_tokens, "(b) shared system prompt tokens")
      ->check(CLI::Range(2, 1 << 20));
  dialogue->add_option("--turns", d.turns, "(b) user turns per session")->check(CLI::Range(1, 1000));
  dialogue->add_option("--user-tokens", d.user_tokens, "(b) tokens per user turn")->check(CLI::Range(1, 1 << 16));
  dialogue->add_option("--reply-tokens", d.reply_tokens, "(b) generated tokens per turn")->check(CLI::Range(1, 1 << 16));
  dialogue->add_option("--scaling", df->scaling,
                       "(b) with sharing only, once per session count (e.g. 1,8,32,64), beside the 32-token "
                       "prefill rate")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  dialogue->add_option("-o,--output", df->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  dialogue->add_option("--json", df->json_path, "also write the results as JSON to this file");
  dialogue->callback([df, &exit_code] { exit_code = bench_dialogue(*df); });

  auto lf = std::make_shared<LongchatBenchFlags>();
  LongchatBenchOptions& lo = lf->options;
  CLI::App* longchat = bench->add_subcommand(
      "longchat", "conversations outgrowing their KV budget: peak KV, throughput and TTFT against unbounded contexts");
  add_bench_engine_flags(*longchat, lo.engine, "tokens per KV block (and per eviction block)");
  longchat->add_option("--sessions", lo.sessions, "concurrent conversations")->check(CLI::Range(1, 4096));
  longchat->add_option("--turns", lo.turns, "user turns per conversation")->check(CLI::Range(1, 1000));
  longchat->add_option("--kv-budget-tokens", lo.kv_budget_tokens, "each sequence's KV budget in the bounded run")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  longchat->add_option("--growth", lo.growth, "each conversation grows to this many times the budget")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  longchat->add_option("--system-tokens", lo.system_tokens, "shared system prompt tokens, BOS included")
      ->check(CLI::Range(2, 1 << 20));
  longchat->add_option("--reply-tokens", lo.reply_tokens, "generated tokens per turn")->check(CLI::Range(1, 1 << 16));
  longchat
      ->add_option_function<std::string>(
          "--evict",
          // CLI11 has checked the name, so the lookup cannot fail.
          [&lo](const std::string& v) { lo.evict.kind = parse_evict_kind(v).value_or(lo.evict.kind); },
          "what the bounded run forgets: attention, window, sinks-window or h2o")
      ->check(CLI::IsMember({"attention", "window", "sinks-window", "h2o"}))
      ->default_str(std::string(evict_kind_name(lo.evict.kind)));
  longchat->add_option("-o,--output", lf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  longchat->add_option("--json", lf->json_path, "also write the results as JSON to this file");
  longchat->callback([lf, &exit_code] { exit_code = bench_longchat(*lf); });

  auto rf = std::make_shared<ReuseBenchFlags>();
  ReuseBenchOptions& ro = rf->options;
  CLI::App* reuse =
      bench->add_subcommand("reuse", "non-prefix reuse: TTFT of an edited, extended or shortened cached conversation");
  add_bench_engine_flags(*reuse, ro.engine);
  reuse->add_option("--tokens", ro.prompt_tokens, "tokens of the cached conversation, BOS included")
      ->check(CLI::Range(3, 1 << 20));
  reuse->add_option("--edit", ro.edit_tokens, "tokens replaced at the start, inserted in the middle, deleted at the start")
      ->check(CLI::Range(1, 1 << 20));
  reuse->add_option("-r,--repetitions", ro.repetitions, "measured runs of each mode in each scenario")
      ->check(CLI::Range(1, 1000));
  reuse->add_option("--reuse-lead", ro.reuse_lead, "shift mode computes the first K tokens of each reused span")
      ->check(CLI::Range(0, 1 << 20));
  reuse->add_option("--agree", ro.agree_tokens, "greedy tokens generated and compared with mode off")
      ->check(CLI::Range(1, 1024));
  reuse->add_option("-o,--output", rf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  reuse->add_option("--json", rf->json_path, "also write the results as JSON to this file");
  reuse->add_option("--dump-prompts", rf->dump_prompts,
                    "write the prompts as token ids ({base, edit, insert, delete}) to this file and measure nothing");
  reuse->callback([rf, &exit_code] { exit_code = bench_reuse(*rf); });

  auto gf = std::make_shared<RagBenchFlags>();
  RagBenchOptions& go = gf->options;
  CLI::App* rag = bench->add_subcommand(
      "rag", "RAG prompts: TTFT of shuffled precomputed document chunks with reuse off, prefix, shift and blend");
  add_bench_engine_flags(*rag, go.engine);
  rag->add_option("--system-tokens", go.system_tokens, "tokens of the system prompt, BOS included")
      ->check(CLI::Range(2, 1 << 20));
  rag->add_option("--chunks", go.chunks, "chunks drawn per request (K)")->check(CLI::Range(1, 4096));
  rag->add_option("--chunk-tokens", go.chunk_tokens, "tokens per chunk (C)")->check(CLI::Range(1, 1 << 20));
  rag->add_option("--pool", go.pool, "chunks computed before the requests (P)")->check(CLI::Range(1, 1 << 16));
  rag->add_option("--question-tokens", go.question_tokens, "tokens of the question")->check(CLI::Range(1, 1 << 20));
  rag->add_option("-r,--repetitions", go.repetitions, "requests, each run in every mode")->check(CLI::Range(1, 1000));
  rag->add_option("--reuse-lead", go.reuse_lead, "shift and blend compute the first K tokens of each reused span")
      ->check(CLI::Range(0, 1 << 20));
  rag->add_option("--blend-ratio", gf->blend_ratio, "share of copied tokens blend recomputes, or auto");
  rag->add_option("--agree", go.agree_tokens, "greedy tokens generated and compared with mode off")
      ->check(CLI::Range(1, 1024));
  rag->add_option("--seed", go.seed, "seed of the chunk draws");
  rag->add_option("-o,--output", gf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  rag->add_option("--json", gf->json_path, "also write the results as JSON to this file");
  rag->callback([gf, &exit_code] { exit_code = bench_rag(*gf); });

  auto sf = std::make_shared<RestoreBenchFlags>();
  RestoreBenchOptions& so = sf->options;
  CLI::App* restore = bench->add_subcommand(
      "restore", "a prefix restored from the disk tier after a restart, and shared through Redis, vs recomputed");
  add_bench_engine_flags(*restore, so.engine);
  restore->add_option("--prefix-tokens", so.prefix_tokens, "tokens the first server computes, BOS included")
      ->check(CLI::Range(3, 1 << 20));
  restore->add_option("--suffix-tokens", so.suffix_tokens, "tokens the measured request adds to the prefix")
      ->check(CLI::Range(1, 1 << 20));
  restore->add_option("-r,--repetitions", so.repetitions, "measured runs of each side")->check(CLI::Range(1, 1000));
  restore->add_option("--agree", so.agree_tokens, "greedy tokens generated and compared with the cold run")
      ->check(CLI::Range(1, 1024));
  restore->add_flag("--no-redis", sf->no_redis, "skip part (b), the second process on one Redis");
  restore->add_option("-o,--output", sf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  restore->add_option("--json", sf->json_path, "also write the results as JSON to this file");
  // The benchmark runs itself again with this as part (b)'s other server.
  restore->add_option("--write-redis", sf->write_redis, "")->group("");
  restore->callback([sf, &exit_code] { exit_code = bench_restore(*sf); });

  auto pf = std::make_shared<PeakBenchFlags>();
  CLI::App* peak = bench->add_subcommand("peak", "f32 fma and int8 dot-product peak of this CPU, the ceiling of prefill");
  peak->add_option("-t,--threads", pf->options.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  peak->add_option("--ms", pf->options.millis, "milliseconds per measured run")->check(CLI::Range(1, 60000));
  peak->add_option("-r,--repetitions", pf->options.repetitions, "measured runs of each loop (the best counts)")
      ->check(CLI::Range(1, 1000));
  peak->add_option("--json", pf->json_path, "also write the results as JSON to this file");
  peak->callback([pf, &exit_code] { exit_code = bench_peak(*pf); });

  auto mem = std::make_shared<MemoryBenchOptions>();
  CLI::App* memory = bench->add_subcommand("memory", "memory-read bandwidth, the ceiling of decode speed");
  memory->add_option("--size-mb", mem->size_mb, "buffer size in MiB")->check(CLI::Range(64, 1 << 16));
  memory->add_option("-t,--threads", mem->n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  memory->add_option("-r,--repetitions", mem->repetitions, "measured passes")->check(CLI::Range(1, 1000));
  memory->callback([mem, &exit_code] {
    auto result = run_memory_bench(*mem);
    if (!result) {
      std::fprintf(stderr, "clmcache: %s\n", result.error().message.c_str());
      exit_code = 1;
      return;
    }
    std::cout << to_json(*mem, *result).dump(2) << "\n";
    exit_code = 0;
  });
  for (CLI::App* each : bench->get_subcommands([](CLI::App*) { return true; })) add_kernels_flag(*each);
}

}  // namespace clm
