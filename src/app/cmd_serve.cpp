// `clmcache serve`: the OpenAI-compatible HTTP server. Parses its flags into
// ServerOptions and EngineOptions, starts the scheduler loop, and turns
// SIGTERM/SIGINT into a graceful shutdown that exits 0.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <pthread.h>
#include <sys/resource.h>

#include "app/chat_flags.h"
#include "app/cli_flags.h"
#include "app/commands.h"
#include "app/http_server.h"
#include "app/session_hooks.h"
#include "tier/session_archive.h"

namespace clm {

namespace {

struct ServeFlags {
  EngineFlags engine;
  SamplerParams sampler;
  ServerOptions server;
  ChatTemplateFlags chat;
  double shutdown_grace_s = 10.0;
  bool persist_sessions = false;  // --persist-sessions: sessions kept beside the disk cache
};

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

// Every connection is a descriptor: take what the hard limit allows, and
// keep --max-connections below it so that accept never runs out.
void raise_open_file_limit(HttpLimits& limits) {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return;
  if (nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
    getrlimit(RLIMIT_NOFILE, &nofile);
  }
  constexpr rlim_t kReserved = 64;  // model files, logs, the listening socket
  if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur > kReserved &&
      static_cast<rlim_t>(limits.max_connections) > nofile.rlim_cur - kReserved) {
    limits.max_connections = static_cast<int>(nofile.rlim_cur - kReserved);
    std::fprintf(stderr, "clmcache: --max-connections lowered to %d (open file limit)\n", limits.max_connections);
  }
}

int serve(ServeFlags& f) {
  // Block the termination signals before any thread starts, so that every
  // thread inherits the mask and only the waiter below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that hangs up mid-stream makes the next write fail with EPIPE;
  // that must cancel its generation, not kill the process. A closed
  // terminal (SIGHUP) does not stop a server either; it reloads nothing.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  raise_open_file_limit(f.server.limits);
  if (f.persist_sessions && f.engine.tiers.disk_cache.empty()) {
    std::fprintf(stderr, "clmcache: --persist-sessions needs --disk-cache (sessions are kept beside the disk cache, "
                         "whose blocks they resume from)\n");
    return 1;
  }

  auto engine = load_engine(f.engine);
  if (!engine) return 1;
  auto renderer = load_chat_renderer(f.chat, engine->model().file(), engine->model().tokenizer());
  if (!renderer) return 1;
  f.server.defaults.model_id = model_id_of(engine->options().model_path);
  f.server.defaults.sampler = f.sampler;
  // A sequence with a KV budget forgets instead of stopping at the context.
  f.server.defaults.max_tokens_limit = engine->options().kv_budget_tokens > 0 ? 1 << 24 : engine->options().n_ctx;
  f.server.defaults.max_tokens = std::min(f.server.defaults.max_tokens, engine->options().n_ctx);
  f.server.defaults.n_vocab = engine->model().tokenizer().n_vocab();
  // A KV budget lets a prompt outgrow the context; its bytes are then
  // bounded as if the context were kBudgetPromptContexts times larger.
  constexpr std::size_t kBudgetPromptContexts = 16;
  if (f.server.limits.max_prompt_bytes == 0)
    f.server.limits.max_prompt_bytes = static_cast<std::size_t>(engine->options().n_ctx) *
                                       (engine->options().kv_budget_tokens > 0 ? kBudgetPromptContexts : 1) *
                                       longest_token_bytes(engine->model().tokenizer());

  // Declared before the server, whose sessions tell it of every change.
  std::unique_ptr<SessionArchive> archive;
  std::unique_ptr<SessionSaver> saver;
  HttpServer server(*engine, f.server, *renderer);
  if (f.persist_sessions) {
    const std::string path = SessionArchive::path_for(f.engine.tiers.disk_cache);
    auto opened = SessionArchive::open(path);
    if (!opened) {
      std::fprintf(stderr, "clmcache: %s\n", opened.error().message.c_str());
      return 1;
    }
    archive = std::move(*opened);
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    SessionStore& sessions = server.context().sessions;
    saver = std::make_unique<SessionSaver>(*archive);
    sessions.add_observer(saver.get());
    const std::size_t restored =
        sessions.restore(archive->load(f.server.session_timeout_s, now_ms), engine->model().tokenizer(), now_ms);
    std::fprintf(stderr, "clmcache: %zu saved session(s) resumed from %s\n", restored, path.c_str());
  }
  auto port = server.bind();
  if (!port) {
    std::fprintf(stderr, "clmcache: %s\n", port.error().message.c_str());
    return 1;
  }
  engine->scheduler().start();
  std::printf("clmcache: serving %s (%s chat format) on http://%s:%d\n", f.server.defaults.model_id.c_str(),
              std::string(renderer->name()).c_str(), f.server.host.c_str(), *port);
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "clmcache: %s received, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    server.shutdown(f.shutdown_grace_s);
  });
  server.run();
  // run() also returns if listening failed; wake the waiter so it can finish.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  engine->scheduler().stop();
  std::fprintf(stderr, "clmcache: stopped\n");
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  add_engine_flags(*cmd, flags->engine);
  add_batch_flag(*cmd, flags->engine);
  add_sampler_flags(*cmd, flags->sampler);
  cmd->add_option("--max-queued", flags->engine.options.max_queued, "requests waiting for room before 429s")
      ->check(CLI::Range(1, 1 << 20));
  ServerOptions& s = flags->server;
  cmd->add_option("--host", s.host, "address to listen on");
  cmd->add_option("--port", s.port, "port to listen on (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", s.api_key, "require 'Authorization: Bearer KEY' (except on / and /health)");
  cmd->add_option("--session-timeout", s.session_timeout_s,
                  "seconds a session_id's last turn is remembered for reuse")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--session-pin-max-share", flags->engine.options.session_pin_max_share,
                  "most of the KV pool sessions may pin (0..1); beyond it the least recently used session is "
                  "unpinned (0: sessions pin nothing)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--persist-sessions", flags->persist_sessions,
                "keep sessions beside --disk-cache and resume them after a restart (needs --disk-cache)");
  cmd->add_option("--max-tokens", s.defaults.max_tokens, "tokens to generate when a request does not say")
      ->check(CLI::Range(1, 1 << 24));
  add_http_limit_flags(*cmd, s.limits);
  cmd->add_option("--cors-origin", s.cors_origins,
                  "an origin (scheme://host[:port]) whose pages may call the API, or '*'; repeatable");
  add_chat_template_flags(*cmd, flags->chat);
  cmd->add_option("--shutdown-grace", flags->shutdown_grace_s,
                  "seconds in-flight requests may finish after SIGTERM before they are cancelled")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->callback([flags, &exit_code] { exit_code = serve(*flags); });
}

}  // namespace clm
