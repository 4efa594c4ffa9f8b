// HttpSession: one client connection of the event-driven HTTP front. It
// reads a request head under the header limits and deadline, checks Host,
// Origin and the API key before any body is read, reads the body under the
// body limit (chunked included) and deadline, and runs the route: cheap
// routes on its I/O thread, the rest on the handler pool. A generation is
// driven without blocking: the scheduler's "tokens ready" news is posted to
// the connection's strand, streamed output is written asynchronously with a
// bounded buffer, and a read stays pending so that a client who leaves
// cancels its generation at once. Everything a session does runs on its
// strand.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "app/http_policy.h"
#include "app/http_routes.h"
#include "app/memory_trim.h"
#include "app/server_context.h"

namespace clm {

// What every connection of one server shares.
struct SessionShared {
  ServerContext& ctx;
  const RouteTable& routes;
  const AccessPolicy& policy;
  boost::asio::thread_pool& handlers;
  boost::asio::thread_pool& renderers;  // for the routes that render a chat template
  MemoryTrim& trim;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, SessionShared& shared);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void start();  // from the acceptor; the rest happens on the strand

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  void read_head();
  void on_head(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void run_route();
  void on_route_result(RouteResult result);
  // Refuses the request; the connection closes after the answer, since a
  // body may be left unread.
  void refuse(const ApiError& error);
  void send(HttpResponse res);
  void end_request();

  void begin_generation(std::unique_ptr<GenerationReply> generation);
  void wake();  // any thread: the generation has output
  void pump();
  void write_out();
  void watch_peer();
  void abandon();  // the client is gone or too slow: cancel and close

  void arm(double seconds);
  void disarm();
  void close_now();
  void close_after_send();  // stop sending, read what the client still sends for a moment, close

  boost::asio::ip::tcp::socket socket_;
  boost::asio::any_io_executor strand_;
  SessionShared& s_;
  boost::asio::steady_timer deadline_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  HttpRequest request_;
  const Route* route_ = nullptr;
  bool keep_alive_ = false;
  bool first_request_ = true;
  bool closed_ = false;

  std::unique_ptr<GenerationReply> generation_;
  std::string out_;   // framed bytes waiting to be written
  std::string wire_;  // the bytes of the write in progress
  bool writing_ = false;
  bool stream_done_ = false;
  bool watching_ = false;          // a read is pending to notice the client leaving
  bool resume_after_watch_ = false;  // the watch was cancelled to read the next request
  std::atomic<bool> wake_posted_{false};
  // Closing: what is read and dropped before the socket closes.
  std::optional<std::uint64_t> body_left_;  // of a refused body of declared length
  std::uint64_t drain_left_ = 0;
  std::vector<char> drain_;
};

}  // namespace clm
