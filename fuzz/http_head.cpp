// An HTTP request on arbitrary bytes, read as the server reads one
// (app/http_session.cpp): Boost.Beast's parser with the server's default
// limits reads the head, which becomes the server's HttpRequest and goes
// through the access checks (Host, Origin, CORS preflight, API key), under
// a policy bound to loopback and under one with a key and any origin; then
// the body is read with the body limit, chunked framing included.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "app/api_key.h"
#include "app/http_head.h"
#include "app/http_limits.h"
#include "app/http_policy.h"

namespace http = boost::beast::http;

namespace {

// Feeds the parser until it has what it asked for (the head, or the whole
// message), or the bytes end or it fails.
void parse(http::request_parser<http::string_body>& parser, std::string_view& rest, bool head_only) {
  while (!rest.empty() && !(head_only ? parser.is_header_done() : parser.is_done())) {
    boost::beast::error_code ec;
    const std::size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    rest.remove_prefix(used);
    if (ec || used == 0) return;
  }
}

void check_head(const clm::AccessPolicy& policy, const clm::HttpRequest& request) {
  (void)clm::check_access(policy, request, "127.0.0.1");
  (void)clm::cors_headers(policy, request);
  if (request.method == "OPTIONS" && request.has_header("Access-Control-Request-Method"))
    (void)clm::preflight_response(policy, request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const clm::HttpLimits limits;
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parse(parser, rest, true);
  if (!parser.is_header_done()) return 0;

  const auto request = clm::request_from_head(parser.get(), limits.max_headers);
  if (!request) return 0;
  check_head(clm::AccessPolicy{.bound_host = "127.0.0.1"}, *request);
  check_head(clm::AccessPolicy{.bound_host = "0.0.0.0", .api_key_set = true, .cors_origins = {"*"}}, *request);
  const std::string keys[] = {"sk-test"};
  (void)clm::api_key_accepted(keys, request->header("Authorization"));
  (void)clm::header_name_equals(request->header("Expect"), "100-continue");

  if (parser.content_length() && *parser.content_length() > limits.max_body_bytes) return 0;
  parser.body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
  parse(parser, rest, false);
  return 0;
}
