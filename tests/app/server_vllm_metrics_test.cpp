// The vLLM metric names routers scrape (vllm:num_requests_running, _waiting,
// kv_cache_usage_perc, prefix_cache_queries/hits) carry the same figures as
// clmcache's own metrics and /stats, with vLLM's meaning.
#include <gtest/gtest.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/prometheus_text.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

const char* kPrompt =
    "The little red hen found a grain of wheat in the yard. She asked the cat, the dog and the duck "
    "who would help her plant it, and none of them would.";

class ServerVllmMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<test::ServerProcess>(
        std::vector<std::string>{"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"});
    ASSERT_GT(server_->port(), 0);
  }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_read_timeout(120, 0);
    return c;
  }
  json get_json(const char* path) const {
    auto res = client()->Get(path);
    EXPECT_TRUE(res);
    return res ? json::parse(res->body) : json::object();
  }
  test::PromText scrape() const {
    auto res = client()->Get("/metrics");
    EXPECT_TRUE(res);
    std::string error;
    test::PromText t = test::parse_prometheus_text(res ? res->body : "", error);
    EXPECT_EQ(error, "");
    return t;
  }
  void complete(const json& body) const {
    auto res = client()->Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  }
  std::unique_ptr<test::ServerProcess> server_;
};

TEST_F(ServerVllmMetricsTest, PrefixCacheCountersEqualStats) {
  const test::PromText before = scrape();
  EXPECT_EQ(before.types.at("vllm:prefix_cache_queries_total"), "counter");
  EXPECT_EQ(before.types.at("vllm:prefix_cache_hits_total"), "counter");
  EXPECT_EQ(before.types.at("vllm:kv_cache_usage_perc"), "gauge");
  EXPECT_EQ(before.types.at("vllm:num_requests_running"), "gauge");
  EXPECT_EQ(before.types.at("vllm:num_requests_waiting"), "gauge");
  // The same prompt twice: the second finds the first's full blocks.
  for (int i = 0; i < 2; ++i) complete({{"prompt", kPrompt}, {"max_tokens", 4}, {"temperature", 0}});
  complete({{"prompt", "Once upon a time"}, {"max_tokens", 2}});
  // A response is written before the scheduler retires its sequence: wait
  // (bounded) until the last one is gone, then compare one quiet moment.
  for (int i = 0; i < 500 && scrape().sum("clmcache_requests_running") > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const json cache = get_json("/stats")["cache"];
  const test::PromText t = scrape();
  EXPECT_GT(cache["reused_tokens"].get<double>(), 0.0) << cache.dump();
  EXPECT_EQ(t.sum("vllm:prefix_cache_queries_total"), cache["prompt_tokens"].get<double>());
  EXPECT_EQ(t.sum("vllm:prefix_cache_hits_total"), cache["reused_tokens"].get<double>());
  // Idle: nothing runs, nothing waits, and cached blocks do not count as used.
  EXPECT_GT(cache["blocks_cached"].get<int>(), 0);
  EXPECT_EQ(t.sum("vllm:kv_cache_usage_perc"),
            cache["blocks_used"].get<double>() / cache["blocks_total"].get<double>());
  EXPECT_EQ(t.sum("vllm:num_requests_running"), 0.0);
  EXPECT_EQ(t.sum("vllm:num_requests_waiting"), 0.0);
  EXPECT_EQ(server_->terminate(30), 0) << server_->log();
}

TEST_F(ServerVllmMetricsTest, GaugesFollowARunningGeneration) {
  // Scrape while a long generation runs; the tiny model is quick, so retry
  // (bounded) until one scrape lands during it.
  bool seen_running = false;
  for (int attempt = 0; attempt < 20 && !seen_running; ++attempt) {
    std::atomic<bool> done{false};
    std::thread generation([&] {
      complete({{"prompt", kPrompt}, {"max_tokens", 400}, {"ignore_eos", true}});
      done = true;
    });
    while (!done && !seen_running) {
      const test::PromText t = scrape();
      const double running = t.sum("vllm:num_requests_running");
      EXPECT_EQ(running, t.sum("clmcache_requests_running"));
      EXPECT_EQ(t.sum("vllm:num_requests_waiting"), t.sum("clmcache_requests_queued"));
      const double used = t.sum("clmcache_kv_blocks", {{"state", "used"}});
      const double total = used + t.sum("clmcache_kv_blocks", {{"state", "cached"}}) +
                           t.sum("clmcache_kv_blocks", {{"state", "free"}});
      const double usage = t.sum("vllm:kv_cache_usage_perc");
      EXPECT_EQ(usage, used / total);
      if (running >= 1.0) {
        seen_running = true;
        EXPECT_GT(usage, 0.0);
        EXPECT_LE(usage, 1.0);
      }
    }
    generation.join();
  }
  EXPECT_TRUE(seen_running);
  EXPECT_EQ(server_->terminate(30), 0) << server_->log();
}

}  // namespace
}  // namespace clm
