// `clmcache serve`: the OpenAI-compatible HTTP server. Parses its flags into
// ServerOptions and EngineOptions, starts the scheduler loop, and turns
// SIGTERM/SIGINT into a graceful shutdown that exits 0.
#include <csignal>
#include <cstdio>
#include <thread>

#include <pthread.h>
#include <sys/resource.h>

#include "app/api_key.h"
#include "app/commands.h"
#include "app/http_server.h"
#include "app/kv_event_flags.h"
#include "app/serving_flags.h"
#include "app/session_persistence.h"

namespace clm {

namespace {

struct ServeFlags {
  ServingFlags serving;
  std::string api_key_file;
  double shutdown_grace_s = 10.0;
  double shutdown_delay_s = 0.0;
  KvEventPublisherOptions kv_events;
  bool kv_events_topic_given = false;
};

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
  ServingFlags& sf = f.serving;
  raise_open_file_limit(sf.server.limits);
  if (!f.api_key_file.empty()) {
    auto keys = read_api_key_file(f.api_key_file);
    if (!keys) {
      std::fprintf(stderr, "clmcache: %s\n", keys.error().message.c_str());
      return 1;
    }
    sf.server.api_keys.insert(sf.server.api_keys.end(), keys->begin(), keys->end());
  }
  for (const std::string& key : sf.server.api_keys) {
    if (key.empty()) {
      std::fprintf(stderr, "clmcache: an API key may not be empty\n");
      return 1;
    }
  }
  if (sf.server.namespace_per_api_key && sf.server.api_keys.empty()) {
    std::fprintf(stderr, "clmcache: --namespace-per-api-key needs --api-key or --api-key-file\n");
    return 1;
  }
  if (auto checked = check_serving_flags(sf); !checked) {
    std::fprintf(stderr, "clmcache: %s\n", checked.error().message.c_str());
    return 1;
  }
  if (auto checked = check_kv_event_flags(f.kv_events, f.kv_events_topic_given); !checked) {
    std::fprintf(stderr, "clmcache: %s\n", checked.error().message.c_str());
    return 1;
  }

  // Opened before the engine, whose cache tells it of its first state (all
  // blocks cleared), and closed after it.
  std::unique_ptr<KvEventPublisher> kv_events;
  EngineDeps deps;
  if (!f.kv_events.endpoint.empty()) {
    auto opened = KvEventPublisher::open(f.kv_events);
    if (!opened) {
      std::fprintf(stderr, "clmcache: %s\n", opened.error().message.c_str());
      return 1;
    }
    kv_events = std::move(*opened);
    deps.kv_events = kv_events.get();
    const KvEventCounters bound = kv_events->counters();
    std::fprintf(stderr, "clmcache: KV events on %s (topic '%s')%s%s\n", bound.endpoint.c_str(), bound.topic.c_str(),
                 bound.replay_endpoint.empty() ? "" : ", replay on ", bound.replay_endpoint.c_str());
  }

  auto engine = load_engine(sf.engine, deps);
  if (!engine) return 1;
  auto renderer = load_chat_renderer(sf.chat, engine->model().file(), engine->model().tokenizer());
  if (!renderer) return 1;
  fit_server_options(sf, *engine);

  // Declared before the server, whose sessions tell it of every change.
  std::unique_ptr<PersistedSessions> persisted;
  HttpServer server(*engine, sf.server, *renderer);
  server.context().kv_events = kv_events.get();
  if (sf.persist_sessions) {
    auto opened = PersistedSessions::open(sf.engine.tiers.disk_cache, server.context().sessions,
                                          engine->model().tokenizer(), sf.server.session_timeout_s);
    if (!opened) {
      std::fprintf(stderr, "clmcache: %s\n", opened.error().message.c_str());
      return 1;
    }
    persisted = std::move(*opened);
    std::fprintf(stderr, "clmcache: %zu saved session(s) resumed from %s\n", persisted->restored(),
                 persisted->path().c_str());
  }
  auto port = server.bind();
  if (!port) {
    std::fprintf(stderr, "clmcache: %s\n", port.error().message.c_str());
    return 1;
  }
  engine->start();
  std::printf("clmcache: serving %s (%s chat format) on http://%s:%d\n", sf.server.defaults.model_id.c_str(),
              std::string(renderer->name()).c_str(), sf.server.host.c_str(), *port);
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "clmcache: %s received, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    server.shutdown(f.shutdown_grace_s, f.shutdown_delay_s);
  });
  server.run();
  // run() also returns if listening failed; wake the waiter so it can finish.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  engine->stop();
  std::fprintf(stderr, "clmcache: stopped\n");
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  add_serving_flags(*cmd, flags->serving);
  ServerOptions& s = flags->serving.server;
  cmd->add_option("--host", s.host, "address to listen on");
  cmd->add_option("--port", s.port, "port to listen on (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", s.api_keys,
                  "require 'Authorization: Bearer KEY' (except on /, /dashboard and /health); repeatable: any one "
                  "is accepted")
      ->allow_extra_args(false);
  cmd->add_option("--api-key-file", flags->api_key_file, "more keys, one a line ('#' starts a comment)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--namespace-per-api-key", s.namespace_per_api_key,
                "each key's requests share no cached K/V with another key's (in RAM or any tier)");
  add_http_limit_flags(*cmd, s.limits);
  cmd->add_option("--cors-origin", s.cors_origins,
                  "an origin (scheme://host[:port]) whose pages may call the API, or '*'; repeatable");
  cmd->add_option("--shutdown-grace", flags->shutdown_grace_s,
                  "seconds in-flight requests may finish after SIGTERM before they are cancelled")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--shutdown-delay", flags->shutdown_delay_s,
                  "seconds after SIGTERM during which /health answers 503 but requests are still served, so that "
                  "a load balancer's health checks take the server out first")
      ->check(CLI::Range(0.0, 600.0));
  add_kv_event_flags(*cmd, flags->kv_events);
  cmd->callback([flags, cmd, &exit_code] {
    flags->kv_events_topic_given = cmd->count("--kv-events-topic") > 0;
    exit_code = serve(*flags);
  });
}

}  // namespace clm
