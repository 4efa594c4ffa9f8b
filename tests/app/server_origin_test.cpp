// Browsers and `clmcache serve`: a page from another origin cannot make a
// browser post to the local server (a text/plain POST needs no preflight,
// so the server itself refuses it), origins allowed with --cors-origin get
// a proper preflight answer and CORS headers, and without an API key a Host
// that does not name the server (DNS rebinding) is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/raw_http.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::RawConnection;

std::vector<std::string> model_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The raw answer to one request with these extra headers (and Host as given).
std::string exchange(int port, const std::string& method, const std::string& path, const std::string& body,
                     const std::string& headers, const std::string& host = {}) {
  RawConnection c(port);
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " +
                        (host.empty() ? "127.0.0.1:" + std::to_string(port) : host) + "\r\n" + headers +
                        "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_TRUE(c.send(request));
  return c.receive(30);
}

const std::string kBody = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();

TEST(ServerOrigin, CrossOriginPostsAreRefusedUnlessAllowed) {
  test::ServerProcess server(model_args({"--cors-origin", "http://app.example:3000"}));
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  // The "simple" request any web page can make a browser send.
  const std::string evil =
      exchange(port, "POST", "/v1/completions", kBody, "Origin: http://evil.example\r\nContent-Type: text/plain\r\n");
  EXPECT_EQ(test::http_status(evil), 403) << evil;
  EXPECT_NE(test::http_body(evil).find("origin_not_allowed"), std::string::npos) << evil;
  // The server's own page (same origin) may.
  const std::string self = exchange(port, "POST", "/v1/completions", kBody,
                                    "Origin: http://127.0.0.1:" + std::to_string(port) +
                                        "\r\nContent-Type: application/json\r\n");
  EXPECT_EQ(test::http_status(self), 200) << self;
  // An allowed origin: preflight, then the request with CORS headers.
  const std::string preflight = exchange(port, "OPTIONS", "/v1/completions", "",
                                         "Origin: http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\n"
                                         "Access-Control-Request-Headers: content-type, authorization\r\n");
  EXPECT_EQ(test::http_status(preflight), 204) << preflight;
  EXPECT_NE(preflight.find("Access-Control-Allow-Origin: http://app.example:3000"), std::string::npos) << preflight;
  EXPECT_NE(preflight.find("Access-Control-Allow-Methods:"), std::string::npos) << preflight;
  EXPECT_NE(preflight.find("Access-Control-Allow-Headers: Authorization, Content-Type"), std::string::npos);
  const std::string allowed = exchange(port, "POST", "/v1/completions", kBody,
                                       "Origin: http://app.example:3000\r\nContent-Type: application/json\r\n");
  EXPECT_EQ(test::http_status(allowed), 200) << allowed;
  EXPECT_NE(allowed.find("Access-Control-Allow-Origin: http://app.example:3000"), std::string::npos) << allowed;
  // A preflight from a stranger is refused.
  const std::string stranger = exchange(port, "OPTIONS", "/v1/completions", "",
                                        "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n");
  EXPECT_EQ(test::http_status(stranger), 403) << stranger;
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerOrigin, HostMustNameTheServerWhenNoKeyIsSet) {
  test::ServerProcess open_server(model_args());
  ASSERT_GT(open_server.port(), 0);
  const int port = open_server.port();
  const std::string port_s = std::to_string(port);
  const std::string rebound = exchange(port, "POST", "/v1/completions", kBody, "", "attacker.example:" + port_s);
  EXPECT_EQ(test::http_status(rebound), 403) << rebound;
  EXPECT_NE(test::http_body(rebound).find("host_not_allowed"), std::string::npos) << rebound;
  EXPECT_EQ(test::http_status(exchange(port, "GET", "/v1/models", "", "", "localhost:" + port_s)), 200);
  EXPECT_EQ(test::http_status(exchange(port, "GET", "/v1/models", "", "", "127.0.0.1:" + port_s)), 200);
  EXPECT_EQ(test::http_status(exchange(port, "GET", "/v1/models", "", "", "[::1]:" + port_s)), 200);
  // An address literal naming another machine is not this server either.
  const std::string elsewhere = exchange(port, "GET", "/v1/models", "", "", "10.1.2.3:" + port_s);
  EXPECT_EQ(test::http_status(elsewhere), 403) << elsewhere;
  EXPECT_NE(test::http_body(elsewhere).find("host_not_allowed"), std::string::npos) << elsewhere;
  EXPECT_EQ(open_server.terminate(30), 0) << open_server.log();

  // Bound to every address, reached on loopback: loopback names only.
  test::ServerProcess wildcard(model_args({"--host", "0.0.0.0"}));
  ASSERT_GT(wildcard.port(), 0);
  const std::string wport = std::to_string(wildcard.port());
  EXPECT_EQ(test::http_status(exchange(wildcard.port(), "GET", "/v1/models", "", "", "127.0.0.1:" + wport)), 200);
  EXPECT_EQ(test::http_status(exchange(wildcard.port(), "GET", "/v1/models", "", "", "localhost:" + wport)), 200);
  EXPECT_EQ(test::http_status(exchange(wildcard.port(), "GET", "/v1/models", "", "", "10.1.2.3:" + wport)), 403);
  EXPECT_EQ(wildcard.terminate(30), 0) << wildcard.log();

  // With a key, the key is the gate: any name may be used to reach it.
  test::ServerProcess keyed(model_args({"--api-key", "k"}));
  ASSERT_GT(keyed.port(), 0);
  const std::string named = exchange(keyed.port(), "GET", "/v1/models", "", "Authorization: Bearer k\r\n",
                                     "models.internal.example:" + std::to_string(keyed.port()));
  EXPECT_EQ(test::http_status(named), 200) << named;
  EXPECT_EQ(keyed.terminate(30), 0) << keyed.log();
}

// HAProxy's `option httpchk GET /health` sends HTTP/1.0 with no Host: no
// browser sends that, so it is not a rebinding risk and must be answered.
TEST(ServerOrigin, HealthCheckWithoutHostIsAnswered) {
  test::ServerProcess server(model_args());
  ASSERT_GT(server.port(), 0);
  const auto send_raw = [&](const std::string& request) {
    RawConnection c(server.port());
    EXPECT_TRUE(c.send(request));
    return c.receive(30);
  };
  const std::string bare = send_raw("GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(test::http_status(bare), 200) << bare;
  const std::string bare_models = send_raw("GET /v1/models HTTP/1.0\r\n\r\n");
  EXPECT_EQ(test::http_status(bare_models), 200) << bare_models;
  // A Host that is present but foreign is still refused, on any path.
  const std::string foreign = send_raw("GET /health HTTP/1.0\r\nHost: attacker.example\r\n\r\n");
  EXPECT_EQ(test::http_status(foreign), 403) << foreign;
  EXPECT_NE(test::http_body(foreign).find("host_not_allowed"), std::string::npos) << foreign;
  // An empty Host is present: it names nothing, so it is refused too.
  const std::string empty = send_raw("GET /health HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(test::http_status(empty), 403) << empty;
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
