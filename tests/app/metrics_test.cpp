// MetricsRegistry and ServerMetrics: the exposition text parses strictly,
// values add up, histograms are cumulative, label values are escaped.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "app/api_key.h"
#include "app/metrics_registry.h"
#include "app/server_metrics.h"
#include "app/web_page.h"
#include "support/prometheus_text.h"

namespace clm {
namespace {

test::PromText parse(const std::string& text) {
  std::string error;
  auto t = test::parse_prometheus_text(text, error);
  EXPECT_EQ(error, "") << text;
  return t;
}

TEST(Metrics, CountersGaugesAndLabels) {
  MetricsRegistry r;
  r.define_counter("x_total", "things");
  r.define_gauge("g", "level");
  r.add("x_total", {{"k", "a"}});
  r.add("x_total", {{"k", "a"}}, 2);
  r.add("x_total", {{"k", "q\"uo\\te\n"}});
  r.set("g", {}, 1.5);
  r.set("g", {}, 0.25);
  EXPECT_EQ(r.value("x_total", {{"k", "a"}}), 3.0);
  const auto t = parse(r.render());
  EXPECT_EQ(t.types.at("x_total"), "counter");
  EXPECT_EQ(t.types.at("g"), "gauge");
  EXPECT_EQ(t.help.at("x_total"), "things");
  EXPECT_EQ(t.sum("x_total", {{"k", "a"}}), 3.0);
  EXPECT_EQ(t.sum("x_total", {{"k", "q\"uo\\te\n"}}), 1.0);
  EXPECT_EQ(t.sum("g"), 0.25);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  MetricsRegistry r;
  r.define_histogram("lat_seconds", "latency", {0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) r.observe("lat_seconds", {{"e", "x"}}, v);
  const std::string text = r.render();
  const auto t = parse(text);
  EXPECT_EQ(t.sum("lat_seconds_bucket", {{"le", "0.1"}}), 2.0);  // le is inclusive
  EXPECT_EQ(t.sum("lat_seconds_bucket", {{"le", "1"}}), 3.0);
  EXPECT_EQ(t.sum("lat_seconds_bucket", {{"le", "10"}}), 4.0);
  EXPECT_EQ(t.sum("lat_seconds_bucket", {{"le", "+Inf"}}), 5.0);
  EXPECT_EQ(t.sum("lat_seconds_count"), 5.0);
  EXPECT_DOUBLE_EQ(t.sum("lat_seconds_sum"), 55.65);
}

TEST(Metrics, ParserRejectsBrokenText) {
  std::string error;
  test::parse_prometheus_text("x 1\n", error);
  EXPECT_NE(error, "");  // no TYPE line
  test::parse_prometheus_text("# TYPE x counter\nx{a=\"1} 1\n", error);
  EXPECT_NE(error, "");
  test::parse_prometheus_text("# TYPE x counter\nx one\n", error);
  EXPECT_NE(error, "");
  test::parse_prometheus_text("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", error);
  EXPECT_NE(error, "");
}

TEST(ServerMetrics, NamesAndValues) {
  ServerMetrics m;
  m.record_request("/v1/completions", 200);
  m.record_request("/v1/completions", 400);
  m.record_generation("/v1/completions", 20, 16, ReuseCounts{12, 4, 1, 3}, 5, 0.3, 0.02);
  CacheStats s;
  s.blocks_total = 10;
  s.blocks_used = 2;
  s.blocks_cached = 3;
  s.blocks_free = 5;
  s.block_bytes = 1024;
  s.blocks_looked_up = 4;
  s.blocks_hit = 1;
  s.prompt_tokens = 40;
  s.reused_tokens = 8;
  s.shifted_tokens = 2;
  s.spans_reused = 3;
  s.plans_stale = 1;
  m.update_cache(s);
  SchedulerStats sched;
  sched.running = 1;
  sched.queued = 2;
  sched.blend_probed_tokens = 30;
  sched.blend_recomputed_tokens = 4;
  sched.prefill_flops = 1.5e9;
  sched.evicted_blocks_budget = 7;
  sched.evicted_blocks_pressure = 2;
  sched.evicted_tokens = 9 * 16;
  sched.evict_candidates = 3;
  sched.evict_protected_blocks = 4;
  sched.sequences_over_budget = 1;
  m.update_scheduler(sched);
  const auto t = parse(m.render());
  EXPECT_EQ(t.sum("clmcache_requests_total"), 2.0);
  EXPECT_EQ(t.sum("clmcache_requests_total", {{"status", "400"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_total"), 20.0);
  EXPECT_EQ(t.sum("clmcache_cached_tokens_total"), 16.0);
  EXPECT_EQ(t.sum("clmcache_generated_tokens_total"), 5.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "prefix"}}), 12.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "shift"}}), 4.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "recomputed"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "computed"}}), 3.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total"), 20.0);
  EXPECT_EQ(t.sum("clmcache_kv_reuse_rate"), 0.25);
  EXPECT_EQ(t.sum("clmcache_kv_spans_reused_total"), 3.0);
  EXPECT_EQ(t.sum("clmcache_kv_plans_stale_total"), 1.0);
  EXPECT_EQ(t.sum("clmcache_blend_probed_tokens_total"), 30.0);
  EXPECT_EQ(t.sum("clmcache_blend_recomputed_tokens_total"), 4.0);
  EXPECT_EQ(t.sum("clmcache_kv_evicted_blocks_total", {{"reason", "budget"}}), 7.0);
  EXPECT_EQ(t.sum("clmcache_kv_evicted_blocks_total", {{"reason", "pressure"}}), 2.0);
  EXPECT_EQ(t.sum("clmcache_kv_evicted_tokens_total"), 144.0);
  EXPECT_EQ(t.sum("clmcache_kv_evict_candidates"), 3.0);
  EXPECT_EQ(t.sum("clmcache_kv_evict_protected_blocks"), 4.0);
  EXPECT_EQ(t.sum("clmcache_kv_sequences_over_budget"), 1.0);
  EXPECT_EQ(t.sum("clmcache_prefill_flops_total"), 1.5e9);
  EXPECT_EQ(t.sum("clmcache_requests_queued"), 2.0);
  EXPECT_EQ(t.sum("clmcache_request_duration_seconds_count", {{"endpoint", "/v1/completions"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_time_to_first_token_seconds_count"), 1.0);
  EXPECT_EQ(t.sum("clmcache_kv_blocks", {{"state", "free"}}), 5.0);
  EXPECT_EQ(t.sum("clmcache_kv_blocks"), 10.0);
  EXPECT_EQ(t.sum("clmcache_kv_block_hit_rate"), 0.25);
  EXPECT_EQ(t.sum("clmcache_kv_memory_used_bytes"), 5.0 * 1024);
  EXPECT_EQ(t.sum("clmcache_requests_queued"), 2.0);
  // vLLM's names for what routers read, with vLLM's meaning.
  EXPECT_EQ(t.sum("vllm:num_requests_running"), 1.0);
  EXPECT_EQ(t.sum("vllm:num_requests_waiting"), 2.0);
  EXPECT_EQ(t.sum("vllm:kv_cache_usage_perc"), 0.2);  // used blocks only: cached ones are evictable
  EXPECT_EQ(t.sum("vllm:prefix_cache_queries_total"), 40.0);
  EXPECT_EQ(t.sum("vllm:prefix_cache_hits_total"), 8.0);
  const std::set<std::string> vllm_names = {"vllm:num_requests_running", "vllm:num_requests_waiting",
                                            "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
                                            "vllm:prefix_cache_hits_total"};
  for (const auto& [name, type] : t.types)
    EXPECT_TRUE(name.starts_with("clmcache_") || vllm_names.contains(name)) << name;
  // Mirrored totals never go back, even if an older snapshot is scraped.
  s.spans_reused = 2;
  m.update_cache(s);
  EXPECT_EQ(parse(m.render()).sum("clmcache_kv_spans_reused_total"), 3.0);
  s.spans_reused = 5;
  m.update_cache(s);
  EXPECT_EQ(parse(m.render()).sum("clmcache_kv_spans_reused_total"), 5.0);
}

TEST(ApiKey, BearerMustMatchOneKeyExactly) {
  const std::vector<std::string> none;
  const std::vector<std::string> one = {"s3cret"};
  const std::vector<std::string> two = {"s3cret", "other-key"};
  EXPECT_TRUE(api_key_accepted(none, ""));
  EXPECT_TRUE(api_key_accepted(none, "Bearer anything"));
  EXPECT_TRUE(api_key_accepted(one, "Bearer s3cret"));
  EXPECT_FALSE(api_key_accepted(one, ""));
  EXPECT_FALSE(api_key_accepted(one, "s3cret"));
  EXPECT_FALSE(api_key_accepted(one, "Bearer s3cre"));
  EXPECT_FALSE(api_key_accepted(one, "Bearer s3cret2"));
  EXPECT_FALSE(api_key_accepted(one, "Bearer S3cret"));
  EXPECT_TRUE(api_key_accepted(two, "Bearer s3cret"));
  EXPECT_TRUE(api_key_accepted(two, "Bearer other-key"));
  EXPECT_FALSE(api_key_accepted(two, "Bearer other-ke"));
  EXPECT_FALSE(api_key_accepted(two, "Bearer "));
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
}

TEST(WebPage, SelfContainedChatPage) {
  const std::string_view page = chat_web_page();
  EXPECT_TRUE(page.starts_with("<!doctype html>"));
  EXPECT_NE(page.find("/v1/chat/completions"), std::string_view::npos);
  EXPECT_NE(page.find("[DONE]"), std::string_view::npos);
  EXPECT_NE(page.find("<textarea"), std::string_view::npos);
  // No external assets: nothing is loaded from another origin.
  EXPECT_EQ(page.find("src=\"http"), std::string_view::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string_view::npos);
}

}  // namespace
}  // namespace clm
