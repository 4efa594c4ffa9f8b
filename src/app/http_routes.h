// The route table of `clmcache serve`: which handler answers a method and
// path, and whether it may run on an I/O thread. A handler answers at once
// with a response, or hands back a generation that the connection drives as
// the scheduler produces tokens.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/http_message.h"
#include "app/routes_generation.h"

namespace clm {

struct RouteResult {
  HttpResponse response;                   // used when generation is null
  std::unique_ptr<GenerationReply> generation;
};

// on_ready: what a started generation calls (from the scheduler's thread)
// when it has output; a handler that starts none ignores it.
using RouteHandler = std::function<RouteResult(const HttpRequest&, std::function<void()> on_ready)>;

// Where a route's handler runs.
enum class RouteThread {
  Io,        // cheap, lock-free answers: on the I/O thread that read the request
  Handlers,  // parses, tokenizes or may take a lock held across a scheduler step
  // Renders a chat template first. A template is untrusted input (it comes
  // with the model file) and may spend its whole time limit: such routes get
  // a pool of their own, so that /tokenize and completions never queue
  // behind a rendering.
  Renderers,
};

struct Route {
  std::string method;
  std::string path;
  RouteThread thread = RouteThread::Io;
  bool json_body = false;  // the body is JSON: its shape is checked first
  RouteHandler handler;
};

class RouteTable {
 public:
  void add(Route route) { routes_.push_back(std::move(route)); }
  // Plain responses, cheap enough for an I/O thread.
  void get(std::string path, std::function<HttpResponse()> answer);
  // nullptr: no route; path_known then says whether another method has it.
  const Route* find(const std::string& method, const std::string& path, bool& path_known) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace clm
