// What every HTTP route of `clmcache serve` shares: the engine, the server's
// options, its metrics and sessions, and the draining flag set on shutdown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "app/dashboard_history.h"
#include "app/http_limits.h"
#include "app/kv_event_publisher.h"
#include "app/openai_request.h"
#include "app/server_metrics.h"
#include "app/session_hooks.h"
#include "engine/engine.h"
#include "engine/session_store.h"
#include "model/chat_renderer.h"

namespace clm {

// The disk tier as the dashboard reports it: where, its size cap and the
// free-space floor its writes keep (--disk-cache and its limits).
struct DiskTierSettings {
  std::string spec;        // a directory, or sqlite:FILE; empty: no disk tier
  double max_gb = 0;       // 0: no size cap
  double min_free_gb = 0;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (the one chosen is printed)
  std::vector<std::string> api_keys;  // empty: no key needed; else any one of them
  // Each key's requests get a cache namespace of their own (--namespace-per-api-key).
  bool namespace_per_api_key = false;
  double session_timeout_s = 600.0;
  HttpLimits limits;
  // Origins (scheme://host[:port]) whose pages may call the API; "*": any.
  // The server's own page is always allowed.
  std::vector<std::string> cors_origins;
  int retry_after_s = 1;  // what a 429/503 tells the client to wait
  RequestDefaults defaults;  // model id, max_tokens, sampler
  DiskTierSettings disk;
};

struct ServerContext {
  ServerContext(Engine& e, ServerOptions o, ChatRenderer c)
      : engine(e),
        options(std::move(o)),
        chat(std::move(c)),
        pinner(e, options.session_timeout_s),
        sessions(options.session_timeout_s) {
    sessions.add_observer(&pinner);
  }

  Engine& engine;
  const ServerOptions options;
  const ChatRenderer chat;  // how chat messages become the prompt
  ServerMetrics metrics;
  SessionPinner pinner;  // a session's last turn stays pinned in RAM for its timeout
  SessionStore sessions;
  DashboardHistory dashboard;  // what GET /dashboard/data serves
  const KvEventPublisher* kv_events = nullptr;  // serve --kv-events-endpoint; not owned
  std::atomic<bool> leaving{false};   // shutting down: /health says 503, work is still served (--shutdown-delay)
  std::atomic<bool> draining{false};  // shutting down: new generations get 503
  std::atomic<int> in_flight{0};      // generations not yet finished
  std::atomic<int> connections{0};    // open HTTP connections
  const int64_t created_unix_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace clm
