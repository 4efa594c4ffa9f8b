#include "app/serving_flags.h"

#include <algorithm>
#include <filesystem>

namespace clm {

namespace {

std::string model_id_of(const std::string& path) {
  std::filesystem::path p(path);
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

// No prompt longer than n_ctx times this many bytes can fit the context.
std::size_t longest_token_bytes(const Tokenizer& tok) {
  std::size_t longest = 1;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) longest = std::max(longest, tok.token_to_piece(id, true).size());
  return longest;
}

}  // namespace

void add_serving_flags(CLI::App& cmd, ServingFlags& f) {
  add_engine_flags(cmd, f.engine);
  add_batch_flag(cmd, f.engine);
  add_sampler_flags(cmd, f.sampler);
  cmd.add_option("--max-queued", f.engine.options.scheduler.max_queued, "requests waiting for room before 429s")
      ->check(CLI::Range(1, 1 << 20));
  ServerOptions& s = f.server;
  cmd.add_option("--session-timeout", s.session_timeout_s, "seconds a session_id's last turn is remembered for reuse")
      ->check(CLI::Range(0.0, 1e9));
  cmd.add_option("--session-pin-max-share", f.engine.options.scheduler.session_pins.max_share,
                 "most of the KV pool sessions may pin (0..1); beyond it the least recently used session is "
                 "unpinned (0: sessions pin nothing)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_flag("--persist-sessions", f.persist_sessions,
               "keep sessions beside --disk-cache and resume them after a restart (needs --disk-cache)");
  cmd.add_option("--max-tokens", s.defaults.max_tokens, "tokens to generate when a request does not say")
      ->check(CLI::Range(1, 1 << 24));
  add_chat_template_flags(cmd, f.chat);
}

Status check_serving_flags(const ServingFlags& f) {
  if (f.persist_sessions && f.engine.tiers.disk_cache.empty())
    return fail("--persist-sessions needs --disk-cache (sessions are kept beside the disk cache, whose blocks "
                "they resume from)");
  return {};
}

void fit_server_options(ServingFlags& f, Engine& engine) {
  RequestDefaults& d = f.server.defaults;
  const EngineOptions& options = engine.options();
  const SchedulerOptions& o = options.scheduler;
  d.model_id = model_id_of(options.load.model_path);
  d.sampler = f.sampler;
  const TierFlags& tiers = f.engine.tiers;
  f.server.disk = {tiers.disk_cache, tiers.disk_cache_max_gb, tiers.min_free_space_gb};
  // A sequence with a KV budget forgets instead of stopping at the context.
  d.max_tokens_limit = o.kv_budget_tokens > 0 ? 1 << 24 : o.n_ctx;
  d.max_tokens = std::min(d.max_tokens, o.n_ctx);
  const Tokenizer& tok = engine.model().tokenizer();
  d.n_vocab = tok.n_vocab();
  // A KV budget lets a prompt outgrow the context; its bytes are then
  // bounded as if the context were kBudgetPromptContexts times larger.
  constexpr std::size_t kBudgetPromptContexts = 16;
  if (f.server.limits.max_prompt_bytes == 0)
    f.server.limits.max_prompt_bytes = static_cast<std::size_t>(o.n_ctx) *
                                       (o.kv_budget_tokens > 0 ? kBudgetPromptContexts : 1) *
                                       longest_token_bytes(tok);
}

}  // namespace clm
