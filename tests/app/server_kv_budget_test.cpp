// `clmcache serve --kv-budget-tokens 96` on the real model, with a pool of
// one context (192 tokens, 12 blocks): a conversation of more than 4x the context
// is scored with echo + logprobs and continued in that flat memory,
// eviction applied between prefill chunks; /stats, /metrics and usage
// report what was forgotten. A request that turns the budget off is refused
// as longer than the context.
#include <gtest/gtest.h>

#include <httplib.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/prometheus_text.h"
#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

constexpr int kCtx = 192;

class ServerKvBudgetTest : public test::SharedServerTest<ServerKvBudgetTest> {
 public:
  static std::vector<std::string> server_args() {
    return {"-m", test::shared_file("models/stories260K.gguf"), "-c", std::to_string(kCtx),
            "--block-size", "16", "--kv-budget-tokens", "96", "--max-batch-tokens", "32"};
  }

  static httplib::Result post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  static json post_ok(const std::string& path, const json& body) {
    auto res = post(path, body);
    EXPECT_TRUE(res);
    if (!res) return json::object();
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body, nullptr, false);
  }
  static std::string get(const std::string& path) {
    httplib::Client c("127.0.0.1", server_->port());
    auto res = c.Get(path.c_str());
    EXPECT_TRUE(res && res->status == 200);
    return res ? res->body : std::string();
  }

};

// A conversation of plain lower-case sentences: nothing the default protect
// rules keep (numbers, identifiers, names), so the budget holds exactly.
std::string long_conversation() {
  std::string text;
  for (int i = 0; i < 32; ++i)
    text += "the little dog ran to the park and saw a big red ball. he played with it all day, and then he went home "
            "to sleep. ";
  return text;
}

TEST_F(ServerKvBudgetTest, ConversationOfFourContextsRunsInFlatMemoryAndIsScoredWithEviction) {
  const json stats_before = json::parse(get("/stats"));
  EXPECT_EQ(stats_before["cache"]["blocks_total"], kCtx / 16);  // the pool holds one context

  // More than 4x the context, scored with echo + logprobs and continued:
  // every prompt position but the first has its log-probability, computed
  // chunk by chunk with forgetting between, in a pool of one context.
  const json r = post_ok("/v1/completions", {{"prompt", long_conversation()},
                                             {"echo", true},
                                             {"logprobs", 1},
                                             {"max_tokens", 32},
                                             {"temperature", 0}});
  ASSERT_TRUE(r.contains("choices")) << r.dump().substr(0, 600);
  const int n_prompt = r["usage"]["prompt_tokens"].get<int>();
  EXPECT_GT(n_prompt, 4 * kCtx);
  const json& values = r["choices"][0]["logprobs"]["token_logprobs"];
  const int generated = r["usage"]["completion_tokens"].get<int>();
  EXPECT_GT(generated, 0);
  ASSERT_EQ(values.size(), static_cast<std::size_t>(n_prompt + generated));
  EXPECT_TRUE(values[0].is_null());
  for (std::size_t i = 1; i < values.size(); ++i) {
    ASSERT_TRUE(values[i].is_number()) << "position " << i;
    EXPECT_LE(values[i].get<double>(), 0.0);
  }
  EXPECT_FALSE(r["choices"][0].contains("finish_details")) << "preempted: " << r["choices"][0]["finish_details"];
  const int evicted = r["usage"]["evicted_tokens"].get<int>();
  EXPECT_GE(evicted, n_prompt - kCtx);
  EXPECT_EQ(evicted % 16, 0);

  // /stats and /metrics count what it forgot.
  const json stats = json::parse(get("/stats"));
  const json& kb = stats["scheduler"]["kv_budget"];
  EXPECT_EQ(kb["evicted_tokens"].get<int>(), evicted) << kb.dump();
  EXPECT_EQ((kb["evicted_blocks_by_reason"]["budget"].get<int>() + kb["evicted_blocks_by_reason"]["pressure"].get<int>()) * 16,
            evicted);
  EXPECT_EQ(kb["sequences_over_budget"], 0);
  EXPECT_EQ(stats["scheduler"]["preempted"], 0);
  EXPECT_EQ(stats["cache"]["blocks_used"], 0);
  std::string error;
  const test::PromText metrics = test::parse_prometheus_text(get("/metrics"), error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(metrics.sum("clmcache_kv_evicted_tokens_total"), static_cast<double>(evicted));
  EXPECT_GT(metrics.sum("clmcache_kv_evicted_blocks_total", {{"reason", "budget"}}), 0.0);
  EXPECT_TRUE(metrics.has("clmcache_kv_sequences_over_budget"));

  // A request may turn the budget off: the prompt is then too long.
  auto refused =
      post("/v1/completions", {{"prompt", long_conversation()}, {"max_tokens", 1}, {"kv_budget_tokens", 0}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_NE(refused->body.find("context_length_exceeded"), std::string::npos) << refused->body;
  auto bad = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 1}, {"kv_budget_tokens", -5}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
}

}  // namespace
}  // namespace clm
