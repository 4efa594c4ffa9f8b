// DashboardHistory: both rings stay within their bounds and drop the oldest
// entry first; samples read the same counters /stats does; and what the
// endpoint writes carries every field, column by column.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "app/dashboard_history.h"

namespace clm {
namespace {

DashboardSample sample_at(double t) {
  DashboardSample s;
  s.t_s = t;
  s.prefix_tokens = static_cast<uint64_t>(t * 10);
  return s;
}

DashboardRequest request(uint64_t id) {
  DashboardRequest r;
  r.id = id;
  r.prompt_tokens = 3;
  r.usage = {1, 0, 0, 2};
  r.map = {{TokenSource::Prefix, false, 0, 1}, {TokenSource::Computed, false, 1, 2}};
  r.token_text = {"a", "b", "c"};
  return r;
}

TEST(DashboardHistory, SamplesAreARingOfBoundedSize) {
  DashboardHistory h({/*samples=*/5, /*requests=*/3});
  for (int i = 0; i < 12; ++i) h.add_sample(sample_at(i));
  const auto snap = h.snapshot();
  ASSERT_EQ(snap.samples.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(snap.samples[i].t_s, 7.0 + static_cast<double>(i));
}

TEST(DashboardHistory, RequestsAreARingOfBoundedSize) {
  DashboardHistory h({/*samples=*/5, /*requests=*/3});
  EXPECT_TRUE(h.snapshot().requests.empty());
  for (uint64_t id = 1; id <= 7; ++id) h.add_request(request(id));
  const auto snap = h.snapshot();
  ASSERT_EQ(snap.requests.size(), 3u);
  EXPECT_EQ(snap.requests[0]->id, 5u);
  EXPECT_EQ(snap.requests[2]->id, 7u);
}

TEST(DashboardHistory, ConcurrentWritersStayWithinBounds) {
  DashboardHistory h({/*samples=*/10, /*requests=*/4});
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&h, w] {
      for (int i = 0; i < 200; ++i) {
        h.add_sample(sample_at(i));
        h.add_request(request(static_cast<uint64_t>(w * 1000 + i)));
        const auto snap = h.snapshot();
        EXPECT_LE(snap.samples.size(), 10u);
        EXPECT_LE(snap.requests.size(), 4u);
      }
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(h.snapshot().samples.size(), 10u);
  EXPECT_EQ(h.snapshot().requests.size(), 4u);
}

TEST(DashboardHistory, ASampleReadsTheStatsCounters) {
  EngineCacheStats stats;
  stats.cache.prompt_tokens = 100;
  stats.cache.reused_tokens = 40;
  stats.cache.shifted_tokens = 20;
  stats.cache.recomputed_tokens = 5;
  stats.cache.blocks_used = 2;
  stats.cache.blocks_cached = 3;
  stats.cache.blocks_free = 11;
  stats.cache.block_bytes = 1000;
  stats.cache.evictions_capacity = 7;
  stats.scheduler.evicted_blocks_budget = 4;
  stats.scheduler.session_pins.blocks = 2;
  stats.scheduler.tokens_per_second = 12.5;
  TierCounters disk;
  disk.name = "disk";
  disk.holds_storage = true;
  disk.stored_bytes = 4096;
  TierCounters redis;
  redis.name = "redis";
  stats.tiers.tiers = {disk, redis};
  const DashboardSample s = dashboard_sample(stats, 3.5);
  EXPECT_EQ(s.t_s, 3.5);
  EXPECT_DOUBLE_EQ(s.token_hit_rate, 0.4);
  EXPECT_EQ(s.prefix_tokens, 40u);
  EXPECT_EQ(s.shift_tokens, 20u);
  EXPECT_EQ(s.recomputed_tokens, 5u);
  EXPECT_EQ(s.computed_tokens, 35u);
  EXPECT_EQ(s.ram_bytes, 5000u);
  ASSERT_EQ(s.tier_bytes.size(), 1u);  // Redis holds no storage of its own
  EXPECT_EQ(s.tier_bytes[0], (std::pair<std::string, uint64_t>{"disk", 4096}));
  EXPECT_EQ(s.blocks_pinned, 2u);
  EXPECT_EQ(s.blocks_free, 11u);
  EXPECT_EQ(s.evictions_capacity, 7u);
  EXPECT_EQ(s.evictions_budget, 4u);
  EXPECT_EQ(s.tokens_per_second, 12.5);
}

TEST(DashboardHistory, JsonHasOneColumnPerFieldAndTheRuns) {
  std::vector<DashboardSample> samples = {sample_at(1), sample_at(2)};
  samples[1].tier_bytes = {{"disk", 9}};
  samples[0].tier_bytes = {{"disk", 8}};
  const nlohmann::json columns = samples_json(samples);
  const nlohmann::json one = sample_json(samples[1]);
  for (const auto& [name, value] : one.items()) {
    ASSERT_TRUE(columns.contains(name)) << name;
    if (name == "tier_bytes") continue;
    ASSERT_EQ(columns[name].size(), 2u) << name;
    EXPECT_EQ(columns[name][1], value) << name;
  }
  EXPECT_EQ(columns["tier_bytes"]["disk"], nlohmann::json::array({8, 9}));
  EXPECT_EQ(columns["prefix_tokens"], nlohmann::json::array({10, 20}));
  EXPECT_EQ(samples_json({})["tier_bytes"], nlohmann::json::object());

  const nlohmann::json r = request_json(request(9));
  EXPECT_EQ(r["id"], 9);
  ASSERT_EQ(r["runs"].size(), 2u);
  EXPECT_EQ(r["runs"][1], (nlohmann::json{{"source", "computed"}, {"evicted", false}, {"begin", 1}, {"length", 2}}));
  EXPECT_EQ(r["reuse"]["prefix"], 1);
  EXPECT_EQ(r["token_text"].size(), 3u);
}

}  // namespace
}  // namespace clm
