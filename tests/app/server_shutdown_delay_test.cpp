// `serve --shutdown-delay S`: after SIGTERM the server first fails its
// health check while it keeps serving, so that a load balancer takes it out
// before it refuses any work; then it drains and exits 0 as without it.
#include <gtest/gtest.h>

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

TEST(ServerShutdownDelay, HealthFailsFirstWhileWorkIsStillServed) {
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "256", "--shutdown-delay",
                              "30"});
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  int status = 200;
  for (int i = 0; i < 500 && status == 200; ++i) {
    health = c.Get("/health");
    ASSERT_TRUE(health);
    status = health->status;
    if (status == 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 503);
  EXPECT_NE(health->body.find("shutting_down"), std::string::npos) << health->body;
  // Still inside the delay: generations are served.
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 4}};
  auto done = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
  auto stats = c.Get("/stats");
  ASSERT_TRUE(stats);
  EXPECT_EQ(json::parse(stats->body)["server"]["draining"], false);
  ::kill(server.pid(), SIGKILL);  // the delay is long on purpose; its end is the plain drain, tested elsewhere
}

TEST(ServerShutdownDelay, TheDrainFollowsTheDelay) {
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "256", "--shutdown-delay",
                              "0.5"});
  ASSERT_GT(server.port(), 0);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(server.terminate(60), 0) << server.log();
  // It waited out the delay before stopping (a lower bound only).
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 0.5);
}

}  // namespace
}  // namespace clm
