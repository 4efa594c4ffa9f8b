// GET /dashboard and GET /dashboard/data against the real `clmcache serve`:
// after a scripted workload (a repeated prompt for prefix hits, a span after
// a new head for shift, a reordered prompt for blend) the endpoint reports
// what /stats reports, and each request's reuse map tiles its prompt and
// agrees with the usage its response carried. The page is public; its data
// needs the key, as /stats does.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

const char* kStory =
    "The old owl lived in a tall tree at the edge of the forest. At night she flew over the fields "
    "and looked for mice, and in the day she slept with one eye open.";
const char* kOtherStory =
    "Tom had a small blue boat. Every morning he took it to the pond and watched it float. "
    "One windy day the boat sailed far away, and Tom ran along the shore to catch it.";
const char* kKey = "dash-key";

httplib::Headers auth() { return {{"Authorization", std::string("Bearer ") + kKey}}; }

json get_json(int port, const char* path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto res = c.Get(path, auth());
  EXPECT_TRUE(res) << path;
  if (!res) return json::object();
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body, nullptr, false);
}

json complete(int port, const std::string& prompt, const char* reuse) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  json body = {{"prompt", prompt}, {"max_tokens", 3}, {"temperature", 0}, {"reuse", reuse}};
  if (std::string(reuse) == "blend") body["blend_ratio"] = 0.5;
  auto res = c.Post("/v1/completions", auth(), body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return json::object();
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body);
}

class ServerDashboardTest : public test::SharedServerTest<ServerDashboardTest> {
 public:
  static std::vector<std::string> server_args() {
    return {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512", "--reuse", "shift", "--reuse-lead", "2",
            "--api-key", kKey};
  }
};

TEST_F(ServerDashboardTest, ThePageIsPublicAndItsDataNeedsTheKey) {
  httplib::Client c("127.0.0.1", port());
  auto page = c.Get("/dashboard");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("fetch('/dashboard/data'"), std::string::npos);
  // Nothing is fetched from elsewhere: no absolute URL in the page.
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(page->body.find("src="), std::string::npos);
  auto chat = c.Get("/");
  ASSERT_TRUE(chat);
  EXPECT_NE(chat->body.find("href=\"/dashboard\""), std::string::npos);
  auto refused = c.Get("/dashboard/data");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  auto stats = c.Get("/stats");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->status, 401);
  auto allowed = c.Get("/dashboard/data", auth());
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
}

// The runs of a request's map tile its prompt; their counts by source.
std::map<std::string, int> checked_counts(const json& r) {
  std::map<std::string, int> counts;
  int at = 0;
  for (const json& run : r["runs"]) {
    EXPECT_EQ(run["begin"].get<int>(), at) << r.dump();
    EXPECT_GT(run["length"].get<int>(), 0);
    at += run["length"].get<int>();
    counts[run["source"].get<std::string>()] += run["length"].get<int>();
  }
  EXPECT_EQ(at, r["prompt_tokens"].get<int>());
  return counts;
}

TEST_F(ServerDashboardTest, TheEndpointAgreesWithStatsAndTheResponses) {
  const std::string story = kStory, other = kOtherStory;
  std::vector<json> replies;
  replies.push_back(complete(port(), "Once upon a time. " + story, "shift"));
  replies.push_back(complete(port(), "Once upon a time. " + story, "shift"));  // the exact prefix
  replies.push_back(complete(port(), "A bird sang in the morning while the sun rose. " + story, "shift"));
  replies.push_back(complete(port(), other + " " + story, "prefix"));
  replies.push_back(complete(port(), story + " " + other, "blend"));

  // The step that ends a request adds its time to the busy time after the
  // reply has gone: /stats is read once two readings agree.
  json stats = get_json(port(), "/stats");
  for (int tries = 0; tries < 100; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const json again = get_json(port(), "/stats");
    const bool settled = again["cache"] == stats["cache"] && again["scheduler"] == stats["scheduler"];
    stats = again;
    if (settled) break;
  }
  const json d = get_json(port(), "/dashboard/data");
  ASSERT_TRUE(d.contains("now")) << d.dump();
  const json& now = d["now"];
  const json& cache = stats["cache"];
  EXPECT_EQ(now["prefix_tokens"], cache["reused_tokens"]);
  EXPECT_EQ(now["shift_tokens"], cache["shifted_tokens"]);
  EXPECT_EQ(now["recomputed_tokens"], cache["recomputed_tokens"]);
  EXPECT_EQ(now["prompt_tokens"], cache["prompt_tokens"]);
  EXPECT_EQ(now["computed_tokens"].get<uint64_t>(),
            cache["prompt_tokens"].get<uint64_t>() - cache["reused_tokens"].get<uint64_t>() -
                cache["shifted_tokens"].get<uint64_t>() - cache["recomputed_tokens"].get<uint64_t>());
  EXPECT_EQ(now["token_hit_rate"], cache["token_hit_rate"]);
  EXPECT_EQ(now["ram_bytes"].get<uint64_t>(),
            (cache["blocks_used"].get<uint64_t>() + cache["blocks_cached"].get<uint64_t>()) *
                cache["block_bytes"].get<uint64_t>());
  for (const char* b : {"blocks_used", "blocks_cached", "blocks_free"}) EXPECT_EQ(now[b], cache[b]) << b;
  EXPECT_EQ(now["evictions_capacity"], cache["evictions_capacity"]);
  EXPECT_EQ(now["evictions_ttl"], cache["evictions_ttl"]);
  const json& sched = stats["scheduler"];
  EXPECT_EQ(now["evictions_budget"], sched["kv_budget"]["evicted_blocks_by_reason"]["budget"]);
  EXPECT_EQ(now["evictions_pressure"], sched["kv_budget"]["evicted_blocks_by_reason"]["pressure"]);
  EXPECT_EQ(now["blocks_pinned"], sched["session_pins"]["blocks"]);
  for (const char* f : {"ttft_p50_s", "ttft_p95_s", "tokens_per_second", "generated_tokens"})
    EXPECT_EQ(now[f], sched[f]) << f;
  EXPECT_EQ(d["tiers"]["tiers"], stats["tiers"]["tiers"]);
  EXPECT_TRUE(d["tiers"]["disk"].is_null());
  EXPECT_EQ(d["sessions"]["pinned_sessions"], sched["session_pins"]["sessions"]);
  EXPECT_GT(now["prefix_tokens"].get<int>(), 0);
  EXPECT_GT(now["shift_tokens"].get<int>(), 0);

  // One map per request, oldest first, each as its response's usage says.
  const json& requests = d["requests"];
  ASSERT_EQ(requests.size(), replies.size()) << d.dump();
  int evicted = 0;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const json& r = requests[i];
    const json& usage = replies[i]["usage"];
    EXPECT_EQ(r["prompt_tokens"], usage["prompt_tokens"]);
    EXPECT_EQ(r["endpoint"], "/v1/completions");
    std::map<std::string, int> counts = checked_counts(r);
    for (const char* s : {"prefix", "shift", "recomputed", "computed"}) {
      EXPECT_EQ(counts[s], usage["prompt_tokens_details"]["reuse"][s].get<int>()) << i << " " << s;
      EXPECT_EQ(r["reuse"][s], usage["prompt_tokens_details"]["reuse"][s]) << i << " " << s;
    }
    if (i > 0) {
      EXPECT_GT(r["id"].get<uint64_t>(), requests[i - 1]["id"].get<uint64_t>());
    }
    EXPECT_EQ(r["token_text"].size(), std::min<std::size_t>(r["prompt_tokens"].get<std::size_t>(), 256));
    for (const json& run : r["runs"]) evicted += run["evicted"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(evicted, 0);  // no KV budget, nothing forgotten
  EXPECT_GT(checked_counts(requests[1])["prefix"], 0);
  EXPECT_GT(checked_counts(requests[2])["shift"], 0);
  EXPECT_GT(checked_counts(requests[4])["recomputed"], 0);
  std::string text;
  for (const json& t : requests[0]["token_text"]) text += t.get<std::string>();
  EXPECT_NE(text.find("owl"), std::string::npos) << text;

  // The history's samples, one a second, catch up with the counters.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  json series;
  for (;;) {
    series = get_json(port(), "/dashboard/data")["series"];
    if (!series["prefix_tokens"].empty() && series["prefix_tokens"].back() == cache["reused_tokens"] &&
        series["t_s"].size() >= 2)
      break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << series.dump();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_LE(series["t_s"].size(), d["max_samples"].get<std::size_t>());
  for (const auto& [name, column] : series.items())
    if (name != "tier_bytes") {
      EXPECT_EQ(column.size(), series["t_s"].size()) << name;
    }
  EXPECT_EQ(series["shift_tokens"].back(), cache["shifted_tokens"]);
  EXPECT_EQ(series["generated_tokens"].back(), sched["generated_tokens"]);
}

// A prompt of more than four contexts under a KV budget: the map marks the
// prompt blocks the budget forgot, and still counts each token by source.
TEST(ServerDashboardBudget, TheMapMarksWhatTheBudgetForgot) {
  constexpr int kCtx = 192, kBlock = 16;
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", std::to_string(kCtx),
                              "--block-size", std::to_string(kBlock), "--kv-budget-tokens", "96",
                              "--max-batch-tokens", "32"});
  ASSERT_GT(server.port(), 0);
  std::string prompt;
  for (int i = 0; i < 32; ++i) prompt += "the little dog ran to the park and saw a big red ball. he played all day. ";
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(120, 0);
  auto res = c.Post("/v1/completions", json{{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}.dump(),
                    "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json usage = json::parse(res->body)["usage"];
  const int n_prompt = usage["prompt_tokens"].get<int>();
  ASSERT_GT(n_prompt, 4 * kCtx);

  auto data = c.Get("/dashboard/data");
  ASSERT_TRUE(data);
  const json d = json::parse(data->body);
  ASSERT_EQ(d["requests"].size(), 1u);
  const json& r = d["requests"][0];
  std::map<std::string, int> counts = checked_counts(r);
  for (const char* s : {"prefix", "shift", "recomputed", "computed"})
    EXPECT_EQ(counts[s], usage["prompt_tokens_details"]["reuse"][s].get<int>()) << s;
  int evicted = 0;
  for (const json& run : r["runs"]) {
    if (!run["evicted"].get<bool>()) continue;
    evicted += run["length"].get<int>();
    EXPECT_EQ(run["begin"].get<int>() % kBlock, 0) << run.dump();  // whole blocks are forgotten
    EXPECT_GT(run["begin"].get<int>(), 0) << "the first block (attention sinks) is kept";
  }
  EXPECT_GE(evicted, n_prompt - kCtx);
  EXPECT_LE(evicted, usage["evicted_tokens"].get<int>());
  EXPECT_EQ(d["now"]["evictions_budget"].get<int>() + d["now"]["evictions_pressure"].get<int>(),
            usage["evicted_tokens"].get<int>() / kBlock);
}

}  // namespace
}  // namespace clm
