// `clmcache chat`: an interactive multi-turn chat in the terminal, using the
// model's chat template. After each reply it prints how many prompt tokens
// came from the cache (exact prefix, shifted spans) and how many were
// computed, and the time to the first token, so the cache's work is visible
// turn by turn.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/chat_flags.h"
#include "app/cli_flags.h"
#include "app/commands.h"
#include "app/stop_strings.h"
#include "model/chat_renderer.h"

namespace clm {

namespace {

struct ChatFlags {
  EngineFlags engine;
  SamplerParams sampler;
  int n_predict = 256;
  ChatTemplateFlags chat;
  std::string system;
};

void print_help() {
  std::fprintf(stderr, "commands: /reset (forget the conversation), /stats (cache counters), /exit\n");
}

void print_stats(const EngineCacheStats& s) {
  const CacheStats& c = s.cache;
  const SchedulerStats& q = s.scheduler;
  std::fprintf(stderr,
               "[cache: %llu requests, %llu of %llu prompt tokens reused (token hit rate %.0f%%, block hit rate %.0f%%)\n"
               " shifted spans: %llu tokens in %llu spans, %llu recomputed; reuse rate %.0f%%\n"
               " blocks used %zu / cached %zu / free %zu, %.1f MiB; evictions: %llu for room, %llu by age;\n"
               " cache efficiency %.2f; time to first token p50 %.1f ms, p95 %.1f ms; %.1f generated tokens/s]\n",
               static_cast<unsigned long long>(c.sequences), static_cast<unsigned long long>(c.reused_tokens),
               static_cast<unsigned long long>(c.prompt_tokens), c.token_hit_rate() * 100, c.block_hit_rate() * 100,
               static_cast<unsigned long long>(c.shifted_tokens), static_cast<unsigned long long>(c.spans_reused),
               static_cast<unsigned long long>(c.recomputed_tokens), c.reuse_rate() * 100,
               c.blocks_used, c.blocks_cached, c.blocks_free, c.memory_used_mb(),
               static_cast<unsigned long long>(c.evictions_capacity), static_cast<unsigned long long>(c.evictions_ttl),
               c.cache_efficiency_ratio(), q.ttft_p50_s * 1e3, q.ttft_p95_s * 1e3, q.tokens_per_second);
}

int chat(ChatFlags& f) {
  auto engine = load_engine(f.engine);
  if (!engine) return 1;
  const Tokenizer& tok = engine->model().tokenizer();
  const auto renderer = load_chat_renderer(f.chat, engine->model().file(), tok);
  if (!renderer) return 1;
  std::fprintf(stderr, "chat format: %s. ", std::string(renderer->name()).c_str());
  print_help();

  std::vector<ChatMessage> messages;
  if (!f.system.empty()) messages.push_back({"system", f.system});
  const std::size_t keep = messages.size();
  std::string line;
  for (;;) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    if (line == "/reset") {
      messages.resize(keep);
      continue;
    }
    if (line == "/stats") {
      print_stats(engine->cache_stats());
      continue;
    }
    if (line[0] == '/') {
      print_help();
      continue;
    }
    messages.push_back({"user", line});
    // What the user typed is text: "</s>" in a line is not the end token.
    const auto prompt = renderer->render_prompt(messages, /*add_generation_prompt=*/true);
    if (!prompt) {
      std::fprintf(stderr, "clmcache: %s\n", prompt.error().message.c_str());
      messages.pop_back();
      continue;
    }
    const std::vector<int32_t> ids = tok.encode(*prompt, /*add_special=*/true);

    GenerateOptions options;
    options.max_tokens = f.n_predict;
    options.sampler = f.sampler;
    StreamDecoder decoder(tok);
    StopStringFilter stops(renderer->stop_strings());
    std::string reply;
    auto stats = engine->generate(ids, options, [&](const GeneratedToken& t) {
      const std::string out = stops.push(decoder.push(t.id));
      reply += out;
      std::cout << out << std::flush;
      return !stops.stopped();
    });
    if (!stats) {
      std::fprintf(stderr, "\nclmcache: %s\n", stats.error().message.c_str());
      messages.pop_back();
      continue;
    }
    const std::string rest = stops.stopped() ? "" : stops.push(decoder.flush()) + stops.flush();
    reply += rest;
    std::cout << rest << "\n";
    messages.push_back({"assistant", reply});
    const ReuseCounts& r = stats->reuse;
    std::fprintf(stderr,
                 "[%d prompt tokens: %d reused from the cache (%d prefix, %d shifted), %d computed (%d of them "
                 "recomputed in shifted spans); first token after %.1f ms; %d generated; %d forgotten within "
                 "the KV budget]\n",
                 stats->prompt_tokens, stats->cached_tokens, r.prefix, r.shift,
                 stats->prompt_tokens - stats->cached_tokens, r.recomputed, stats->time_to_first_token_s * 1e3,
                 stats->generated_tokens, stats->evicted_tokens);
    // A reply cut short (the KV cache was full) says why; the turn stays in
    // the conversation as far as it got, an empty reply included.
    if (!stats->note.empty()) std::fprintf(stderr, "[reply cut short: %s]\n", stats->note.c_str());
  }
  return 0;
}

}  // namespace

void register_chat_command(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* cmd = app.add_subcommand("chat", "interactive multi-turn chat with the model's chat template");
  add_engine_flags(*cmd, f->engine);
  add_batch_flag(*cmd, f->engine);
  add_sampler_flags(*cmd, f->sampler);
  cmd->add_option("-n,--n-predict", f->n_predict, "most tokens per reply")->check(CLI::Range(1, 1 << 20));
  add_chat_template_flags(*cmd, f->chat);
  cmd->add_option("--system", f->system, "system message at the start of the conversation");
  cmd->callback([f, &exit_code] { exit_code = chat(*f); });
}

}  // namespace clm
