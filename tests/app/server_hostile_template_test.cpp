// A chat template is untrusted input (it comes with a model file, or from a
// user's --chat-template-file). One that walks a value shared 2^60 times
// over, given to four chat requests at once, fails each within its time
// limit; meanwhile /health, /tokenize and completions answer at once (the
// renderings have threads of their own), and SIGTERM with a 2 s grace ends
// the server within that grace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Reply {
  int status = 0;
  std::string body;
};

Reply post(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  if (!res) return {};
  return {res->status, res->body};
}

TEST(ServerHostileTemplate, ASelfDoublingListCannotStallTheServer) {
  const std::string file = test::temp_dir() + "/doubling.jinja";
  std::ofstream(file) << "{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}"
                         "{% endfor %}{% if ns.a == ns.a %}{% for m in messages %}{{ m.content }}{% endfor %}"
                         "{% endif %}";
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "512",
                              "--chat-template-file", file, "--shutdown-grace", "2"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
  // Four at once: both render threads spend their 1 s limit twice over.
  const auto t0 = Clock::now();
  std::vector<std::future<Reply>> renders;
  for (int i = 0; i < 4; ++i)
    renders.push_back(std::async(std::launch::async, [&] { return post(port, "/v1/chat/completions", chat); }));
  usleep(200'000);
  // Meanwhile the other routes answer at once: /health on an I/O thread,
  // /tokenize and completions on the handler pool, which renderings never
  // occupy (sharing it, they would wait about 1.8 s here).
  const auto health_t0 = Clock::now();
  {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/health");
    EXPECT_TRUE(res && res->status == 200);
  }
  EXPECT_LT(seconds_since(health_t0), 1.0);
  const auto tokenize_t0 = Clock::now();
  EXPECT_EQ(post(port, "/tokenize", {{"content", "Once upon a time"}}).status, 200);
  EXPECT_EQ(post(port, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}}).status, 200);
  EXPECT_LT(seconds_since(tokenize_t0), 1.0);
  for (auto& reply : renders) {
    const Reply r = reply.get();
    EXPECT_EQ(r.status, 400) << r.body.substr(0, 400);
    const bool told = r.body.find("units of work") != std::string::npos || r.body.find("time limit") != std::string::npos;
    EXPECT_TRUE(told) << r.body.substr(0, 400);
  }
  EXPECT_LT(seconds_since(t0), 2.0 + 2.5) << "each rendering stops at its 1 s limit";
  // A third one in flight when SIGTERM comes: the server still exits within
  // its grace (plus a second).
  auto third = std::async(std::launch::async, [&] { return post(port, "/v1/chat/completions", chat); });
  usleep(200'000);
  const auto term_t0 = Clock::now();
  EXPECT_EQ(server.terminate(30), 0) << server.log();
  EXPECT_LT(seconds_since(term_t0), 2.0 + 1.0);
  third.get();
}

}  // namespace
}  // namespace clm
