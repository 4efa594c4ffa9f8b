#include "app/http_session.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "app/api_key.h"
#include "app/http_head.h"
#include "app/http_reply.h"
#include "app/json_shape.h"

namespace clm {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A bounded label set for clmcache_requests_total: unknown paths are "other".
std::string endpoint_label(const std::string& path) {
  static const char* kKnown[] = {"/",          "/health",         "/v1/models", "/stats",
                                 "/metrics",   "/v1/completions", "/v1/chat/completions",
                                 "/tokenize",  "/detokenize",     "/dashboard", "/dashboard/data"};
  for (const char* k : kKnown)
    if (path == k) return path;
  return "other";
}

// Routes a browser or a load balancer may reach without the key.
// The pages carry no data (what they show is fetched with the key).
bool is_public(const std::string& path) { return path == "/" || path == "/dashboard" || path == "/health"; }

// The address this connection came in on, an IPv4-mapped one as IPv4; empty
// if the socket cannot say.
std::string local_address(const tcp::socket& socket) {
  boost::system::error_code ec;
  asio::ip::address a = socket.local_endpoint(ec).address();
  if (ec) return {};
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a.to_string();
}

std::string status_line(int status) {
  const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
}

std::string chunk_frame(const std::string& data) {
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// The parser's own complaints about the bytes (not a closed connection).
bool is_malformed(beast::error_code ec) {
  const auto& parse_errors = make_error_code(http::error::bad_target).category();
  return ec.category() == parse_errors && ec != http::error::end_of_stream && ec != http::error::partial_message;
}

constexpr std::size_t kWatchReadBytes = 4096;
// What a closing connection still reads and drops, at most: a client that
// sent a whole body the server refused (a 12 MiB upload sent in one go, as
// Python's urllib does) finishes sending and then reads the answer, where
// closing on unread bytes would reset the connection under it. Bounded in
// bytes and time, so that refusing a body costs little whatever is offered.
constexpr std::uint64_t kDrainBytes = std::uint64_t{64} << 20;
constexpr double kDrainS = 2.0;

}  // namespace

HttpSession::HttpSession(tcp::socket socket, SessionShared& shared)
    : socket_(std::move(socket)), strand_(socket_.get_executor()), s_(shared), deadline_(strand_) {
  ++s_.ctx.connections;
  // Events are small writes that must leave at once, not wait for the
  // client's acknowledgement of the previous one (Nagle).
  beast::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
}

HttpSession::~HttpSession() {
  generation_.reset();  // cancels a generation still running
  s_.trim.note_freed(buffer_.capacity());
  --s_.ctx.connections;
}

void HttpSession::start() {
  asio::dispatch(strand_, [self = shared_from_this()] { self->read_head(); });
}

// ---- reading a request

void HttpSession::read_head() {
  const HttpLimits& l = s_.ctx.options.limits;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(l.max_header_bytes));
  // The body's limit is set once the head has passed its checks: a
  // Content-Length over it must not hide a missing API key.
  // (Not boost::none: Boost 1.74 compares a Content-Length with it as "over".)
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  arm(first_request_ ? l.header_timeout_s : l.keep_alive_timeout_s);
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
}

void HttpSession::on_head(beast::error_code ec) {
  if (closed_) return;
  if (ec == http::error::header_limit)
    return refuse(header_too_large_error("over " + std::to_string(s_.ctx.options.limits.max_header_bytes) +
                                         " bytes (--max-header-bytes)"));
  if (ec) {
    // A malformed head gets an answer; a closed or timed-out connection none.
    if (is_malformed(ec))
      return refuse(api_error(ErrorKind::InvalidRequest, "malformed HTTP request: " + ec.message(), "", "bad_request"));
    return close_now();
  }
  disarm();
  const auto& head = parser_->get();
  auto request = request_from_head(head, s_.ctx.options.limits.max_headers);
  if (!request) return refuse(request.error());
  request_ = std::move(*request);
  keep_alive_ = head.keep_alive() && !s_.ctx.draining;

  if (auto denied = check_access(s_.policy, request_, local_address(socket_))) return refuse(*denied);
  if (request_.method == "OPTIONS" && request_.has_header("Access-Control-Request-Method")) {
    // A body on a preflight would be odd; it is not read, so close after.
    if (!parser_->is_done()) keep_alive_ = false;
    return send(preflight_response(s_.policy, request_));
  }
  bool path_known = false;
  route_ = s_.routes.find(request_.method, request_.path, path_known);
  if (!route_) {
    ApiError e = route_not_found_error(request_.method, request_.path);
    if (path_known) {
      e.status = 405;
      e.code = "method_not_allowed";
    }
    return refuse(e);
  }
  // The key is checked before a byte of the body is read.
  if (!is_public(request_.path) &&
      !api_key_accepted(s_.ctx.options.api_keys, request_.header("Authorization")))
    return refuse(unauthorized_error());
  if (parser_->content_length() && *parser_->content_length() > s_.ctx.options.limits.max_body_bytes)
    return refuse(body_too_large_error(s_.ctx.options.limits.max_body_bytes));
  if (parser_->is_done()) return run_route();
  read_body();
}

void HttpSession::read_body() {
  // Counted as it is read, chunked bodies included.
  parser_->body_limit(static_cast<std::uint64_t>(s_.ctx.options.limits.max_body_bytes));
  arm(s_.ctx.options.limits.body_timeout_s);
  auto read = [self = shared_from_this()] {
    http::async_read(self->socket_, self->buffer_, *self->parser_,
                     [self](beast::error_code ec, std::size_t) { self->on_body(ec); });
  };
  if (!header_name_equals(request_.header("Expect"), "100-continue")) return read();
  wire_ = "HTTP/1.1 100 Continue\r\n\r\n";
  asio::async_write(socket_, asio::buffer(wire_), [self = shared_from_this(), read](beast::error_code ec, std::size_t) {
    if (ec || self->closed_) return self->close_now();
    read();
  });
}

void HttpSession::on_body(beast::error_code ec) {
  if (closed_) return;
  if (ec == http::error::body_limit) return refuse(body_too_large_error(s_.ctx.options.limits.max_body_bytes));
  if (ec) {
    if (is_malformed(ec))
      return refuse(api_error(ErrorKind::InvalidRequest, "malformed HTTP body: " + ec.message(), "", "bad_request"));
    return close_now();
  }
  disarm();
  run_route();
}

// ---- running the route

void HttpSession::run_route() {
  request_.body = std::move(parser_->get().body());
  parser_.reset();
  if (route_->json_body) {
    const HttpLimits& l = s_.ctx.options.limits;
    if (auto e = check_json_shape(request_.body, l.max_json_depth, l.max_json_elements)) return refuse(*e);
  }
  std::function<void()> on_ready = [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->wake();
  };
  if (route_->thread == RouteThread::Io) return on_route_result(route_->handler(request_, on_ready));
  auto& pool = route_->thread == RouteThread::Renderers ? s_.renderers : s_.handlers;
  asio::post(pool, [self = shared_from_this(), on_ready] {
    auto result = std::make_shared<RouteResult>();
    try {
      *result = self->route_->handler(self->request_, on_ready);
    } catch (const std::exception& e) {
      result->response = error_response(server_error(std::string("internal error: ") + e.what()));
    }
    asio::post(self->strand_, [self, result] { self->on_route_result(std::move(*result)); });
  });
}

void HttpSession::on_route_result(RouteResult result) {
  s_.trim.note_freed(request_.body.size());
  request_.body = std::string();
  if (closed_) return;  // the generation, if any, is cancelled as `result` goes
  if (result.generation) return begin_generation(std::move(result.generation));
  send(std::move(result.response));
}

// ---- writing a whole response

void HttpSession::refuse(const ApiError& error) {
  keep_alive_ = false;
  // A body of declared length still to come is read and dropped after the
  // answer, no further (parser_->content_length() is what is left unparsed,
  // part of which may already sit in buffer_). A head refused before its
  // end (too many fields, too long) has no length to trust: it closes.
  if (parser_ && parser_->is_header_done() && !parser_->is_done() && parser_->content_length()) {
    const std::uint64_t left = *parser_->content_length();
    body_left_ = left > buffer_.size() ? left - buffer_.size() : 0;
  }
  send(error_response(error));
}

void HttpSession::send(HttpResponse res) {
  s_.ctx.metrics.record_request(endpoint_label(request_.path), res.status);
  if (s_.ctx.draining) keep_alive_ = false;
  std::string head = status_line(res.status);
  if (!res.content_type.empty()) head += "Content-Type: " + res.content_type + "\r\n";
  if (res.status != 204) head += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  head += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : cors_headers(s_.policy, request_)) head += k + ": " + v + "\r\n";
  for (const auto& [k, v] : res.headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  wire_ = std::move(head);
  wire_ += res.body;
  arm(s_.ctx.options.limits.write_timeout_s);
  writing_ = true;
  asio::async_write(socket_, asio::buffer(wire_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->writing_ = false;
    self->disarm();
    if (ec || self->closed_) return self->close_now();
    self->wire_ = std::string();
    self->end_request();
  });
}

void HttpSession::end_request() {
  first_request_ = false;
  if (watching_) {
    // The read watching for a hang-up must end before the next head is read.
    resume_after_watch_ = true;
    beast::error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  if (keep_alive_ && !s_.ctx.draining) return read_head();
  close_after_send();
}

// ---- driving a generation

void HttpSession::begin_generation(std::unique_ptr<GenerationReply> generation) {
  generation_ = std::move(generation);
  if (generation_->streamed()) {
    s_.ctx.metrics.record_request(endpoint_label(request_.path), 200);
    if (s_.ctx.draining) keep_alive_ = false;
    out_ = status_line(200);
    out_ += "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
    out_ += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    for (const auto& [k, v] : cors_headers(s_.policy, request_)) out_ += k + ": " + v + "\r\n";
    out_ += "\r\n";
    // The kernel's send buffer would otherwise grow to megabytes for a
    // client that does not read (on loopback its writes never block until
    // then), so that the stream's own bound would never be reached. A token
    // stream needs little in flight.
    constexpr std::size_t kMinSendBuffer = 64 * 1024, kMaxSendBuffer = 4 * 1024 * 1024;
    const std::size_t send_buffer =
        std::clamp(s_.ctx.options.limits.max_stream_buffer_bytes, kMinSendBuffer, kMaxSendBuffer);
    beast::error_code ignored;
    socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(send_buffer)), ignored);
  }
  watch_peer();
  pump();
}

void HttpSession::wake() {
  if (wake_posted_.exchange(true)) return;
  asio::post(strand_, [self = shared_from_this()] {
    self->wake_posted_ = false;
    self->pump();
  });
}

void HttpSession::pump() {
  if (!generation_ || closed_) return;
  if (!generation_->streamed()) {
    std::optional<HttpResponse> res = generation_->pump_whole();
    if (!res) return;
    generation_.reset();
    return send(std::move(*res));
  }
  std::string events;
  const bool done = generation_->pump_events(events);
  if (!events.empty()) out_ += chunk_frame(events);
  if (done) {
    out_ += "0\r\n\r\n";
    generation_.reset();
    stream_done_ = true;
  }
  // A client that does not keep up loses its stream rather than making the
  // server hold an unbounded backlog for it.
  if (out_.size() > s_.ctx.options.limits.max_stream_buffer_bytes) return abandon();
  if (!writing_ && !out_.empty()) write_out();
}

void HttpSession::write_out() {
  wire_ = std::move(out_);
  out_.clear();
  writing_ = true;
  arm(s_.ctx.options.limits.write_timeout_s);
  asio::async_write(socket_, asio::buffer(wire_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->writing_ = false;
    self->disarm();
    if (self->closed_) return;
    if (ec) return self->abandon();
    if (!self->out_.empty()) return self->write_out();
    if (self->stream_done_) {
      self->stream_done_ = false;
      self->wire_ = std::string();
      self->end_request();
    }
  });
}

void HttpSession::watch_peer() {
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(kWatchReadBytes),
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            self->watching_ = false;
                            if (!ec) self->buffer_.commit(n);
                            if (self->closed_) return;
                            if (self->resume_after_watch_) {
                              self->resume_after_watch_ = false;
                              if (self->keep_alive_ && !self->s_.ctx.draining) return self->read_head();
                              return self->close_after_send();
                            }
                            // EOF or reset: the client left.
                            if (ec) return self->abandon();
                            // It sent more (a pipelined request): keep it for later,
                            // and keep watching while that stays small.
                            if (self->buffer_.size() < self->s_.ctx.options.limits.max_header_bytes)
                              self->watch_peer();
                          });
}

void HttpSession::abandon() {
  generation_.reset();  // cancels the generation if it still runs
  // With a response still being written, the connection is reset, not
  // closed in order: what is still queued for a client that does not read
  // (megabytes in the kernel's buffers, behind a zero window) is dropped now
  // rather than held until it reads, which may be never. An idle or reading
  // connection that timed out is closed in order.
  if (writing_ || !out_.empty()) {
    beast::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
  }
  close_now();
}

// ---- deadlines and closing

void HttpSession::arm(double seconds) {
  deadline_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds)));
  deadline_.async_wait([weak = weak_from_this()](beast::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->abandon();
  });
}

void HttpSession::disarm() { deadline_.cancel(); }

void HttpSession::close_now() {
  if (closed_) return;
  closed_ = true;
  generation_.reset();
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  deadline_.cancel();
}

// Closing with unread bytes in the socket would reset the connection and
// could destroy the answer before the client reads it; so stop sending, read
// and drop what still comes (up to the end of a refused body whose length
// was declared, the client's end, kDrainBytes or kDrainS, whichever comes
// first), then close.
void HttpSession::close_after_send() {
  if (closed_) return;
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  // Bytes already read past the request are dropped with the buffer.
  buffer_.clear();
  drain_left_ = std::min(body_left_.value_or(kDrainBytes), kDrainBytes);
  if (drain_left_ == 0) return close_now();
  drain_.resize(16384);
  arm(kDrainS);
  struct Drain {
    std::shared_ptr<HttpSession> self;
    void operator()(beast::error_code ec, std::size_t n) {
      self->drain_left_ -= std::min<std::uint64_t>(n, self->drain_left_);
      if (ec || self->closed_ || self->drain_left_ == 0) return self->close_now();
      self->socket_.async_read_some(asio::buffer(self->drain_), std::move(*this));
    }
  };
  socket_.async_read_some(asio::buffer(drain_), Drain{shared_from_this()});
}

}  // namespace clm
