// HttpServer: the OpenAI-compatible HTTP front of an Engine, event-driven on
// Boost.Beast/Asio. A few I/O threads serve every connection (an idle or slow
// one costs no thread); parsing, tokenizing and submitting run on a small
// handler pool; tokens come from the scheduler's thread as "ready" news.
// Every limit is a flag (http_limits.h). Shutdown is bounded: new
// generations are refused, in-flight ones get the grace period, then are
// cancelled, and every connection is closed whatever its client does.
#pragma once

#include <memory>

#include "app/server_context.h"
#include "util/error.h"

namespace clm {

class HttpServer {
 public:
  HttpServer(Engine& engine, ServerOptions options, ChatRenderer chat);
  ~HttpServer();

  // Binds the listening socket; returns the port (the chosen one for port 0).
  // A port in use is an error (SO_REUSEADDR only, never SO_REUSEPORT).
  Result<int> bind();
  // Serves until shutdown(); returns on the thread that called it.
  void run();
  // From any thread: first answer /health with 503 for delay_s while still
  // serving (so that a load balancer's checks take this server out before
  // it refuses anything), then refuse new generations, wait up to grace_s
  // for those in flight, cancel the rest, close every connection and stop.
  void shutdown(double grace_s, double delay_s = 0.0);

  ServerContext& context();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clm
