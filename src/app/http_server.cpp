#include "app/http_server.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it

#include <boost/asio.hpp>

#include "app/http_reply.h"
#include "app/http_session.h"
#include "app/routes_dashboard.h"
#include "app/routes_generation.h"
#include "app/routes_info.h"
#include "app/routes_tokenize.h"

namespace clm {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// What a client over --max-connections hears before its connection closes.
std::string too_many_connections_answer() {
  const std::string body = error_response(api_error(ErrorKind::Unavailable, "the server has too many open connections", "",
                                                             "too_many_connections"))
                               .body;
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
         "Retry-After: 1\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

constexpr auto kTrimCheckPeriod = std::chrono::seconds(1);

}  // namespace

struct HttpServer::Impl {
  Impl(Engine& engine, ServerOptions options, ChatRenderer chat)
      : ctx(engine, std::move(options), std::move(chat)),
        policy{ctx.options.host, !ctx.options.api_keys.empty(), ctx.options.cors_origins},
        trim(ctx.options.limits.memory_trim_bytes),
        handlers(static_cast<std::size_t>(ctx.options.limits.handler_threads)),
        renderers(static_cast<std::size_t>(ctx.options.limits.render_threads)),
        shared{ctx, routes, policy, handlers, renderers, trim},
        acceptor(io),
        trim_timer(io),
        dashboard_timer(io) {
    register_info_routes(routes, ctx);
    register_generation_routes(routes, ctx);
    register_tokenize_routes(routes, ctx);
    register_dashboard_routes(routes, ctx);
  }

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors, most likely: wait a little rather than spin.
        std::fprintf(stderr, "clmcache: accept failed: %s\n", ec.message().c_str());
        auto pause = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(50));
        pause->async_wait([this, pause](boost::system::error_code) { accept(); });
        return;
      }
      if (ctx.connections.load() >= ctx.options.limits.max_connections) refuse(std::move(socket));
      else std::make_shared<HttpSession>(std::move(socket), shared)->start();
      accept();
    });
  }

  void refuse(tcp::socket socket) {
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    asio::async_write(*s, asio::buffer(too_many_answer),
                      [s](boost::system::error_code, std::size_t) {
                        boost::system::error_code ignored;
                        s->shutdown(tcp::socket::shutdown_both, ignored);
                      });
  }

  void schedule_trim() {
    trim_timer.expires_after(kTrimCheckPeriod);
    trim_timer.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      trim.trim_if_due();
      schedule_trim();
    });
  }

  // The dashboard's history gets a sample each period, taken on an I/O
  // thread from the snapshot /stats reads: the scheduler only copies its
  // counters under its lock, as it does for every /stats.
  void schedule_dashboard_sample() {
    dashboard_timer.expires_after(std::chrono::seconds(kDashboardSampleSeconds));
    dashboard_timer.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      ctx.dashboard.add_sample(take_dashboard_sample(ctx));
      schedule_dashboard_sample();
    });
  }

  // Declared after what sessions refer to, so that sessions still queued in
  // the handler pool or the event loop go first when the server does.
  ServerContext ctx;
  RouteTable routes;
  AccessPolicy policy;
  MemoryTrim trim;
  asio::io_context io;
  asio::thread_pool handlers;  // destroyed before the loop its sessions' sockets belong to
  asio::thread_pool renderers;
  SessionShared shared;
  tcp::acceptor acceptor;
  asio::steady_timer trim_timer;
  asio::steady_timer dashboard_timer;
  const std::string too_many_answer = too_many_connections_answer();
};

HttpServer::HttpServer(Engine& engine, ServerOptions options, ChatRenderer chat)
    : impl_(std::make_unique<Impl>(engine, std::move(options), std::move(chat))) {}

HttpServer::~HttpServer() {
  impl_->io.stop();
  for (asio::thread_pool* pool : {&impl_->handlers, &impl_->renderers}) {
    pool->stop();
    pool->join();
  }
}

ServerContext& HttpServer::context() { return impl_->ctx; }

Result<int> HttpServer::bind() {
  const ServerOptions& o = impl_->ctx.options;
  const std::string where = o.host + ":" + std::to_string(o.port);
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host, ec);
  if (ec) return fail("cannot listen on " + where + ": '" + o.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on " + where + ": " + ec.message());
  return static_cast<int>(a.local_endpoint().port());
}

void HttpServer::run() {
  Impl& m = *impl_;
  m.accept();
  m.schedule_trim();
  m.ctx.dashboard.add_sample(take_dashboard_sample(m.ctx));
  m.schedule_dashboard_sample();
  std::vector<std::thread> extra;
  for (int i = 1; i < m.ctx.options.limits.io_threads; ++i) extra.emplace_back([&m] { m.io.run(); });
  m.io.run();
  for (auto& t : extra) t.join();
}

void HttpServer::shutdown(double grace_s, double delay_s) {
  Impl& m = *impl_;
  m.ctx.leaving = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
  m.ctx.draining = true;
  auto wait_idle = [&m](double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (m.ctx.in_flight > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  wait_idle(grace_s);
  if (m.ctx.in_flight > 0) {
    // Cancelled generations end their streams with an error event.
    m.ctx.engine.stop();
    wait_idle(0.5);
  }
  // The last events were handed to the sockets as they were produced; give
  // them a moment to leave, then close every connection by stopping the loop
  // (the sessions and their sockets go with it).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  asio::post(m.io, [&m] {
    boost::system::error_code ignored;
    m.acceptor.close(ignored);
    m.trim_timer.cancel();
    m.dashboard_timer.cancel();
  });
  m.io.stop();
}

}  // namespace clm
