// The Redis tier through the CLI and the server: two `clmcache run`
// processes share blocks through one redis-server (started by the test), a
// server reports its tiers in /stats and /metrics, and a bad --redis URL is
// a clear error.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/server_metrics.h"
#include "app/tier_report.h"
#include "support/prometheus_text.h"
#include "support/redis_server.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/story_prompt.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::run_command;
using test::shell_quote;

std::string model() { return test::shared_file("models/stories260K.gguf"); }

const char* const kPrompt = test::kStoryPrompt;

std::string run_with_redis(const std::string& url) {
  return shell_quote(test::cli_binary()) + " run --json --temp 0 -n 4 --block-size 16 -m " + shell_quote(model()) +
         " --redis " + shell_quote(url) + " -p " + shell_quote(kPrompt);
}

TEST(TierCli, ASecondProcessReusesWhatTheFirstWroteToRedis) {
  test::RedisServer redis;
  const auto first = run_command(run_with_redis(redis.url()));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto second = run_command(run_with_redis(redis.url()));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json a = json::parse(first.out), b = json::parse(second.out);
  EXPECT_EQ(a["cached_tokens"], 0);
  const int n_prompt = static_cast<int>(a["prompt_token_ids"].size());
  ASSERT_GT(n_prompt, 32);
  // Every full block came from Redis; a prompt ending on a block boundary
  // still computes its last token (its logits are needed).
  EXPECT_EQ(b["cached_tokens"].get<int>(), n_prompt % 16 == 0 ? n_prompt - 1 : n_prompt / 16 * 16);
  EXPECT_EQ(a["token_ids"], b["token_ids"]);
  EXPECT_NE(redis.command({"DBSIZE"}), "0");
}

TEST(TierCli, ABadRedisUrlIsAClearError) {
  const auto r = run_command(shell_quote(test::cli_binary()) + " run -n 1 -m " + shell_quote(model()) +
                             " --redis http://nowhere -p Once");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("redis://host:port"), std::string::npos) << r.err;
}

TEST(TierServer, StatsAndMetricsReportTheRedisTier) {
  test::RedisServer redis;
  test::ServerProcess server({"-m", model(), "--block-size", "16", "--redis", redis.url()});
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  const std::string body = json{{"prompt", kPrompt}, {"max_tokens", 2}, {"temperature", 0}}.dump();
  auto r = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  auto stats = c.Get("/stats");
  ASSERT_TRUE(stats);
  const json tiers = json::parse(stats->body)["tiers"];
  ASSERT_EQ(tiers["tiers"].size(), 1u) << tiers.dump();
  EXPECT_EQ(tiers["tiers"][0]["name"], "redis");
  EXPECT_EQ(tiers["redis_breaker_state"], "closed");
  EXPECT_GE(tiers["writes_queued"].get<int>(), 2);
  EXPECT_EQ(tiers["writes_dropped"], 0);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const auto t = test::parse_prometheus_text(metrics->body, error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(t.sum("clmcache_redis_breaker_state", {{"state", "closed"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_redis_breaker_state", {{"state", "open"}}), 0.0);
  EXPECT_GE(t.sum("clmcache_tier_writes_queued_total"), 2.0);
  EXPECT_EQ(t.sum("clmcache_tier_writes_dropped_total"), 0.0);
  EXPECT_EQ(t.types.at("clmcache_tier_hit_rate"), "gauge");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(TierReport, JsonAndMetricsCarryEveryFigure) {
  TierStats s;
  TierCounters redis;
  redis.name = "redis";
  redis.hits = 3;
  redis.misses = 1;
  redis.writes = 7;
  redis.writes_refused = 2;
  redis.breaker_state = "open";
  redis.damaged_values = 6;
  redis.unauthenticated_values = 4;
  s.tiers.push_back(redis);
  TierCounters disk;
  disk.name = "disk";
  disk.hits = 1;
  disk.misses = 3;
  disk.holds_storage = true;
  disk.stored_bytes = 2'500'000'000;
  disk.quarantined = 2;
  s.tiers.insert(s.tiers.begin(), disk);
  s.copies_to_faster = 5;
  s.writes_queued = 9;
  s.writes_dropped = 4;
  s.writes_pending = 1;
  s.blocks_promoted = 3;
  s.unavailable = {"--disk-cache sqlite:c.sqlite: the disk is nearly full"};
  const json j = tiers_json(s);
  EXPECT_EQ(j["unavailable"], json::array({"--disk-cache sqlite:c.sqlite: the disk is nearly full"}));
  EXPECT_EQ(tiers_json(TierStats{})["unavailable"], json::array());
  EXPECT_EQ(j["tiers"][1]["hit_rate"], 0.75);
  EXPECT_EQ(j["tiers"][1]["writes_refused"], 2);
  EXPECT_FALSE(j["tiers"][1].contains("stored_bytes")) << "Redis' memory is not ours to count";
  EXPECT_EQ(j["tiers"][1]["damaged_values"], 6);
  EXPECT_EQ(j["tiers"][1]["unauthenticated_values"], 4);
  EXPECT_FALSE(j["tiers"][0].contains("damaged_values")) << "a local store quarantines instead";
  EXPECT_EQ(j["tiers"][0]["stored_bytes"], 2'500'000'000u);
  EXPECT_EQ(j["tiers"][0]["quarantined"], 2);
  EXPECT_DOUBLE_EQ(j["disk_cache_size_gb"].get<double>(), 2.5);
  EXPECT_EQ(j["quarantined_files"], 2);
  EXPECT_EQ(j["hit_rates"]["redis"], 0.75);
  EXPECT_EQ(j["hit_rates"]["disk"], 0.25);
  EXPECT_EQ(j["copies_to_faster"], 5);
  EXPECT_TRUE(tiers_json(TierStats{})["disk_cache_size_gb"].is_null());
  EXPECT_EQ(j["writes_dropped"], 4);
  EXPECT_EQ(j["blocks_promoted"], 3);
  EXPECT_EQ(j["redis_breaker_state"], "open");
  EXPECT_TRUE(tiers_json(TierStats{})["redis_breaker_state"].is_null());

  ServerMetrics m;
  m.update_tiers(s);
  std::string error;
  const auto t = test::parse_prometheus_text(m.render(), error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(t.sum("clmcache_tier_hits_total", {{"tier", "redis"}}), 3.0);
  EXPECT_EQ(t.sum("clmcache_tier_misses_total", {{"tier", "redis"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_tier_hit_rate", {{"tier", "redis"}}), 0.75);
  EXPECT_EQ(t.sum("clmcache_tier_writes_total", {{"tier", "redis"}}), 7.0);
  EXPECT_EQ(t.sum("clmcache_tier_writes_refused_total", {{"tier", "redis"}}), 2.0);
  EXPECT_EQ(t.sum("clmcache_tier_writes_dropped_total"), 4.0);
  EXPECT_EQ(t.sum("clmcache_tier_writes_pending"), 1.0);
  EXPECT_EQ(t.sum("clmcache_tier_blocks_promoted_total"), 3.0);
  EXPECT_EQ(t.sum("clmcache_redis_breaker_state", {{"state", "open"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_redis_breaker_state", {{"state", "closed"}}), 0.0);
  EXPECT_EQ(t.sum("clmcache_disk_cache_size_gb"), 2.5);
  EXPECT_EQ(t.sum("clmcache_tier_quarantined_files", {{"tier", "disk"}}), 2.0);
  EXPECT_EQ(t.sum("clmcache_tier_copies_to_faster_total"), 5.0);
  EXPECT_EQ(t.sum("clmcache_tier_values_damaged_total", {{"tier", "redis"}}), 6.0);
  EXPECT_EQ(t.sum("clmcache_tier_values_unauthenticated_total", {{"tier", "redis"}}), 4.0);
}

// A server whose secret differs from the writer's refuses every value (each a
// miss) and says so in /stats and /metrics: what an operator sees when
// someone else writes to the Redis.
TEST(TierServer, ValuesUnderAnotherSecretAreCountedAsUnauthenticated) {
  test::RedisServer redis;
  const std::string body = json{{"prompt", kPrompt}, {"max_tokens", 2}, {"temperature", 0}}.dump();
  {
    test::ServerProcess writer(
        {"-m", model(), "--block-size", "16", "--redis", redis.url(), "--redis-secret", "the writer's"});
    ASSERT_GT(writer.port(), 0);
    httplib::Client c("127.0.0.1", writer.port());
    auto r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    ASSERT_EQ(writer.terminate(30), 0) << writer.log();  // the queued writes go out first
  }
  ASSERT_NE(redis.command({"DBSIZE"}), "0");
  test::ServerProcess reader({"-m", model(), "--block-size", "16", "--redis", redis.url(), "--redis-secret", "another"});
  ASSERT_GT(reader.port(), 0);
  httplib::Client c("127.0.0.1", reader.port());
  auto r = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto stats = c.Get("/stats");
  ASSERT_TRUE(stats);
  const json redis_tier = json::parse(stats->body)["tiers"]["tiers"][0];
  EXPECT_EQ(redis_tier["unauthenticated_values"], 1) << redis_tier.dump();
  EXPECT_EQ(redis_tier["damaged_values"], 1);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const auto t = test::parse_prometheus_text(metrics->body, error);
  EXPECT_EQ(t.sum("clmcache_tier_values_unauthenticated_total", {{"tier", "redis"}}), 1.0);
  EXPECT_EQ(reader.terminate(30), 0) << reader.log();
}

TEST(TierServer, StatsCarryTheDiskCacheSizeAndTheReuseDepth) {
  const std::string dir = test::temp_dir() + "/cache";
  test::ServerProcess server({"-m", model(), "--block-size", "16", "--disk-cache", dir, "--min-free-space-gb", "0"});
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  const std::string body = json{{"prompt", kPrompt}, {"max_tokens", 1}, {"temperature", 0}}.dump();
  int cached = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    cached += json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  }
  ASSERT_GT(cached, 0);
  json stats;
  for (int i = 0; i < 500; ++i) {  // until the writer is done
    stats = json::parse(c.Get("/stats")->body);
    if (stats["tiers"]["writes_pending"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(stats["cache"]["avg_reuse_depth"].get<double>(), cached / 2.0);
  const json& tiers = stats["tiers"];
  EXPECT_GT(tiers["disk_cache_size_gb"].get<double>(), 0.0);
  EXPECT_EQ(tiers["tiers"][0]["name"], "disk");
  EXPECT_GT(tiers["tiers"][0]["stored_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(tiers["quarantined_files"], 0);
  EXPECT_TRUE(tiers["redis_breaker_state"].is_null());
  std::string error;
  const auto t = test::parse_prometheus_text(c.Get("/metrics")->body, error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(t.sum("clmcache_avg_reuse_depth"), cached / 2.0);
  const double gb = tiers["disk_cache_size_gb"].get<double>();
  EXPECT_NEAR(t.sum("clmcache_disk_cache_size_gb"), gb, gb * 1e-5);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
