// `clmcache run`: generate a continuation of one prompt, streamed as text or
// printed as one JSON object.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli_flags.h"
#include "app/commands.h"
#include "app/openai_response.h"
#include "util/float_decimal.h"
#include "util/hex.h"
#include "util/bounded_file.h"

namespace clm {

namespace {

// A prompt of a million tokens is a few MiB of text; past this it is a mistake.
constexpr std::size_t kMaxPromptFileBytes = 64 * kMiB;

struct RunFlags {
  EngineFlags engine;
  SamplerParams sampler;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  int prefill_chunk = 512;
  int top_logprobs = 0;
  bool json = false;
  bool ignore_eos = false;
  bool no_display_prompt = false;
};

int run(const RunFlags& f) {
  std::string prompt = f.prompt;
  if (!f.prompt_file.empty()) {
    auto text = read_bounded_file(f.prompt_file, kMaxPromptFileBytes, "prompt file");
    if (!text) {
      std::fprintf(stderr, "clmcache: %s\n", text.error().message.c_str());
      return 1;
    }
    prompt = std::move(*text);
  }
  EngineFlags engine_flags = f.engine;
  engine_flags.options.scheduler.max_batch_tokens = f.prefill_chunk;  // one request: its chunks are the whole batch
  auto engine = load_engine(engine_flags);
  if (!engine) return 1;
  const Tokenizer& tok = engine->model().tokenizer();
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) {
    std::fprintf(stderr, "clmcache: the prompt is empty and the model adds no BOS token; give -p TEXT\n");
    return 1;
  }

  GenerateOptions options;
  options.max_tokens = f.n_predict;
  options.top_logprobs = f.top_logprobs;
  options.stop_at_end_of_generation = !f.ignore_eos;
  options.sampler = f.sampler;

  std::vector<int32_t> generated;
  nlohmann::json logprobs = nlohmann::json::array();
  StreamDecoder stream(tok);
  if (!f.json && !f.no_display_prompt) {
    std::cout << prompt << std::flush;
  }
  auto stats = engine->generate(ids, options, [&](const GeneratedToken& t) {
    generated.push_back(t.id);
    if (f.json) {
      if (f.top_logprobs > 0) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& [id, lp] : t.top_logprobs)
          top.push_back({{"id", id}, {"token", tok.token_to_piece(id, true)}, {"logprob", as_shortest_decimal(lp)}});
        logprobs.push_back({{"id", t.id}, {"logprob", as_shortest_decimal(t.logprob)}, {"top_logprobs", top}});
      }
    } else {
      std::cout << stream.push(t.id) << std::flush;
    }
    return true;
  });
  if (!stats) {
    std::fprintf(stderr, "\nclmcache: %s\n", stats.error().message.c_str());
    return 1;
  }
  // decode_s covers the forward calls after the first sampled token.
  const double decode_tps =
      stats->decode_s() > 0 && stats->generated_tokens > 1 ? (stats->generated_tokens - 1) / stats->decode_s() : 0.0;
  const int computed = stats->prompt_tokens - stats->cached_tokens;
  const double prefill_tps = stats->prefill_s() > 0 ? computed / stats->prefill_s() : 0.0;
  if (f.json) {
    nlohmann::json out = {
        {"prompt_token_ids", ids},
        {"token_ids", generated},
        {"text", tok.decode(generated)},
        {"stop_reason", to_string(stats->stop_reason)},
        {"model_fingerprint", hex64(engine->fingerprint())},
        {"cached_tokens", stats->cached_tokens},
        {"reuse", reuse_json(stats->reuse)},
        {"blend_probed", stats->blend_probed},
        {"prefill_flops", stats->prefill_flops},
        {"evicted_tokens", stats->evicted_tokens},
        {"timings",
         {{"time_to_first_token_ms", stats->time_to_first_token_s * 1e3},
          {"prompt_tokens_per_second", prefill_tps},
          {"generated_tokens_per_second", decode_tps}}},
    };
    if (f.top_logprobs > 0) out["logprobs"] = logprobs;
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << stream.flush() << std::endl;
    std::fprintf(stderr, "\n[%d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s, first token after %.1f ms, %s]\n",
                 stats->prompt_tokens, prefill_tps, stats->generated_tokens, decode_tps,
                 stats->time_to_first_token_s * 1e3, std::string(to_string(stats->stop_reason)).c_str());
  }
  return 0;
}

}  // namespace

void register_run_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt");
  add_engine_flags(*cmd, flags->engine);
  add_sampler_flags(*cmd, flags->sampler);
  auto* p = cmd->add_option("-p,--prompt", flags->prompt, "prompt text");
  auto* file = cmd->add_option("-f,--file", flags->prompt_file, "read the prompt from a file");
  p->excludes(file);
  cmd->add_option("-n,--n-predict", flags->n_predict, "tokens to generate")->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--prefill-chunk", flags->prefill_chunk, "prompt tokens per forward call")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--top-logprobs", flags->top_logprobs, "with --json: the K most likely tokens at each step")
      ->check(CLI::Range(0, 100));
  cmd->add_flag("--json", flags->json, "print one JSON object instead of streaming text");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--no-display-prompt", flags->no_display_prompt, "do not echo the prompt");
  cmd->callback([flags, &exit_code] { exit_code = run(*flags); });
}

}  // namespace clm
