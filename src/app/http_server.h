// HttpServer: the OpenAI-compatible HTTP front of an Engine. It wires the
// routes, the API key check, body limits, JSON error pages and request
// metrics onto httplib, and shuts down gracefully: new generations are
// refused, in-flight ones get a bounded time to finish, then are cancelled.
#pragma once

#include <httplib.h>

#include <memory>

#include "app/server_context.h"
#include "util/error.h"

namespace clm {

class HttpServer {
 public:
  HttpServer(Engine& engine, ServerOptions options, ChatRenderer chat);
  ~HttpServer();

  // Binds the listening socket; returns the port (the chosen one for port 0).
  Result<int> bind();
  // Serves until shutdown(); returns on the thread that called it.
  void run();
  // From any thread: refuse new generations, wait up to grace_s for those in
  // flight, cancel the rest, then stop serving.
  void shutdown(double grace_s);

  ServerContext& context() { return ctx_; }

 private:
  ServerContext ctx_;
  httplib::Server server_;
};

}  // namespace clm
