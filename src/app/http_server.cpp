#include "app/http_server.h"

#include <algorithm>
#include <thread>

#include "app/api_key.h"
#include "app/http_reply.h"
#include "app/routes_generation.h"
#include "app/routes_info.h"
#include "app/routes_tokenize.h"

namespace clm {

namespace {

// A bounded label set for clmcache_requests_total: unknown paths are "other".
std::string endpoint_label(const std::string& path) {
  static const char* kKnown[] = {"/", "/health", "/v1/models", "/stats", "/metrics", "/v1/completions",
                                 "/v1/chat/completions", "/tokenize", "/detokenize"};
  for (const char* k : kKnown)
    if (path == k) return path;
  return "other";
}

// Routes a browser or a load balancer may reach without the key.
bool is_public(const std::string& path) { return path == "/" || path == "/health"; }

}  // namespace

HttpServer::HttpServer(Engine& engine, ServerOptions options, ChatRenderer chat)
    : ctx_(engine, std::move(options), std::move(chat)) {
  // Every running or queued request may hold a thread while it streams, plus
  // some for the cheap routes.
  const int threads = ctx_.options.http_threads > 0
                          ? ctx_.options.http_threads
                          : std::clamp(engine.options().max_running * 2 + 8, 16, 256);
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  server_.set_payload_max_length(ctx_.options.max_body_bytes);
  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (is_public(req.path) || api_key_accepted(ctx_.options.api_key, req.get_header_value("Authorization")))
      return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, unauthorized_error());
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (no route, body too large, bad request line) come
  // here with an empty body; give them the OpenAI error shape too.
  server_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                        httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    ApiError error;
    if (res.status == 404) error = route_not_found_error(req.method, req.path);
    else if (res.status == 413) error = body_too_large_error(ctx_.options.max_body_bytes);
    else error = api_error(kind_of_http_status(res.status),
                           "the request could not be handled (HTTP " + std::to_string(res.status) + ")");
    if (error.kind == ErrorKind::MethodNotAllowed) error.code = "method_not_allowed";
    reply_error(res, error);
    return httplib::Server::HandlerResponse::Handled;
  }));
  server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, server_error("internal error: " + what));
  });
  server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    ctx_.metrics.record_request(endpoint_label(req.path), res.status);
  });
  register_info_routes(server_, ctx_);
  register_generation_routes(server_, ctx_);
  register_tokenize_routes(server_, ctx_);
}

HttpServer::~HttpServer() { server_.stop(); }

Result<int> HttpServer::bind() {
  const std::string& host = ctx_.options.host;
  if (ctx_.options.port == 0) {
    const int port = server_.bind_to_any_port(host);
    if (port <= 0) return fail("cannot listen on " + host + " (any port)");
    return port;
  }
  if (!server_.bind_to_port(host, ctx_.options.port))
    return fail("cannot listen on " + host + ":" + std::to_string(ctx_.options.port) + " (in use, or not an address here?)");
  return ctx_.options.port;
}

void HttpServer::run() { server_.listen_after_bind(); }

void HttpServer::shutdown(double grace_s) {
  ctx_.draining = true;
  // httplib aborts responses still streaming when it stops, so wait for the
  // generations first; polling is fine at this rate and only on shutdown.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (ctx_.in_flight > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (ctx_.in_flight > 0) {
    // Cancelled generations end their streams with an error event.
    ctx_.engine.scheduler().stop();
    const auto flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (ctx_.in_flight > 0 && std::chrono::steady_clock::now() < flush_deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server_.stop();
}

}  // namespace clm
