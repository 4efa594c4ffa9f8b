// `clmcache bench ...`: end-to-end benchmarks (the measuring lives in bench/).
#include <cstdio>
#include <iostream>

#include "app/commands.h"
#include "memory_bench.h"
#include "model_bench.h"

namespace clm {

namespace {

struct ModelBenchFlags {
  ModelBenchOptions options;
  std::string format = "md";
  std::string kv_type = "f16";
};

int bench_model(ModelBenchFlags& f) {
  f.options.kv_f32 = f.kv_type == "f32";
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
  model->add_option("-t,--threads", mf->options.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  model->add_option("-r,--repetitions", mf->options.repetitions, "measured runs per test, after one warm-up")
      ->check(CLI::Range(1, 1000));
  model->add_option("-o,--output", mf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  model->add_option("--kv-type", mf->kv_type, "KV cache type")->check(CLI::IsMember({"f16", "f32"}));
  model->callback([mf, &exit_code] { exit_code = bench_model(*mf); });

  auto mem = std::make_shared<MemoryBenchOptions>();
  CLI::App* memory = bench->add_subcommand("memory", "memory-read bandwidth, the ceiling of decode speed");
  memory->add_option("--size-mb", mem->size_mb, "buffer size in MiB")->check(CLI::Range(64, 1 << 16));
  memory->add_option("-t,--threads", mem->n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  memory->add_option("-r,--repetitions", mem->repetitions, "measured passes")->check(CLI::Range(1, 1000));
  memory->callback([mem, &exit_code] {
    std::cout << to_json(*mem, run_memory_bench(*mem)).dump(2) << "\n";
    exit_code = 0;
  });
}

}  // namespace clm
