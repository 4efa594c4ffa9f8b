// `clmcache serve --disk-cache DIR` killed with SIGKILL in the middle of a
// stream of requests that write blocks, then restarted on the same
// directory: every entry is whole or absent (`clmcache cache verify` finds
// nothing to quarantine), the restarted server answers, and a prompt
// restored from the disk gives bitwise the greedy tokens and log
// probabilities of a cold server.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::shell_quote;

std::string model() { return test::shared_file("models/stories260K.gguf"); }

std::string story(int n) {
  return "Story " + std::to_string(n) +
         ": once upon a time there was a little girl who lived in a small house near the big forest with her "
         "mother and her father and her dog, and every day they walked to the river to look at the fish";
}

json complete(httplib::Client& c, const std::string& prompt, int max_tokens) {
  const json body = {{"prompt", prompt},
                     {"max_tokens", max_tokens},
                     {"temperature", 0},
                     {"logprobs", 1},
                     {"return_tokens_as_token_ids", true}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  if (!r || r->status != 200) return json();
  return json::parse(r->body);
}

std::vector<std::string> server_args(const std::string& dir) {
  return {"-m", model(), "--block-size", "16", "--disk-cache", dir, "--min-free-space-gb", "0"};
}

// Waits until the server's tier writer has nothing queued.
bool writes_settle(httplib::Client& c) {
  for (int i = 0; i < 500; ++i) {
    auto s = c.Get("/stats");
    if (s && s->status == 200 && json::parse(s->body)["tiers"]["writes_pending"] == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(ServerCrash, KilledMidWritesRestartsOnWholeEntriesAndRestoresBitwise) {
  const std::string dir = test::temp_dir() + "/cache";
  const std::string kept = story(0);
  {
    test::ServerProcess server(server_args(dir));
    ASSERT_GT(server.port(), 0) << server.log();
    httplib::Client c("127.0.0.1", server.port());
    ASSERT_FALSE(complete(c, kept, 1).is_null()) << server.log();
    ASSERT_TRUE(writes_settle(c));

    // Four clients send new prompts (each writes blocks) until the kill.
    std::atomic<int> answered{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t)
      clients.emplace_back([&, t] {
        httplib::Client client("127.0.0.1", server.port());
        for (int i = 0; !stop; ++i)
          if (!complete(client, story(1000 * (t + 1) + i), 1).is_null()) ++answered;
      });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (answered < 12 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(::kill(server.pid(), SIGKILL), 0);
    stop = true;
    for (std::thread& t : clients) t.join();
    EXPECT_GE(answered.load(), 12);
  }

  const auto verify = test::run_command(shell_quote(test::cli_binary()) + " cache verify " + shell_quote(dir));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find(": 0 damaged"), std::string::npos) << verify.out;

  test::ServerProcess restarted(server_args(dir));
  ASSERT_GT(restarted.port(), 0) << restarted.log();
  httplib::Client warm_client("127.0.0.1", restarted.port());
  const json warm = complete(warm_client, kept, 8);
  ASSERT_FALSE(warm.is_null()) << restarted.log();
  EXPECT_GE(warm["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 32) << "restored from the disk";

  test::ServerProcess cold_server({"-m", model(), "--block-size", "16"});
  ASSERT_GT(cold_server.port(), 0) << cold_server.log();
  httplib::Client cold_client("127.0.0.1", cold_server.port());
  const json cold = complete(cold_client, kept, 8);
  ASSERT_FALSE(cold.is_null());
  EXPECT_EQ(cold["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(warm["choices"][0]["logprobs"]["tokens"], cold["choices"][0]["logprobs"]["tokens"]);
  EXPECT_EQ(warm["choices"][0]["logprobs"]["token_logprobs"], cold["choices"][0]["logprobs"]["token_logprobs"]);
  EXPECT_EQ(warm["choices"][0]["text"], cold["choices"][0]["text"]);
  EXPECT_EQ(restarted.terminate(30), 0) << restarted.log();
  EXPECT_EQ(cold_server.terminate(30), 0) << cold_server.log();
}

}  // namespace
}  // namespace clm
