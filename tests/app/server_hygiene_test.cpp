// The real `clmcache serve` on stories260K: special-token text a user types
// into a chat message stays text (the raw completion prompt parses it unless
// asked not to), and the counters tell the truth under KV pool pressure: one
// sequence per request, preemptions counted and reported in the choice's
// finish_details, cancellations counted by cause in /stats and /metrics.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/prometheus_text.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

std::unique_ptr<httplib::Client> client_of(const test::ServerProcess& server) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", server.port());
  c->set_read_timeout(120, 0);
  return c;
}

json post_json(const test::ServerProcess& server, const std::string& path, const json& body, int want_status = 200) {
  auto res = client_of(server)->Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return {};
  EXPECT_EQ(res->status, want_status) << res->body;
  return json::parse(res->body, nullptr, false);
}

json get_json(const test::ServerProcess& server, const std::string& path) {
  auto res = client_of(server)->Get(path.c_str());
  EXPECT_TRUE(res);
  if (!res) return {};
  return json::parse(res->body, nullptr, false);
}

int prompt_tokens_of(const json& response) { return response["usage"]["prompt_tokens"].get<int>(); }

json chat(const std::vector<std::pair<std::string, std::string>>& messages) {
  json list = json::array();
  for (const auto& [role, content] : messages) list.push_back({{"role", role}, {"content", content}});
  return {{"messages", list}, {"max_tokens", 8}, {"temperature", 0}};
}

TEST(ServerHygiene, SpecialTokenTextInChatContentStaysText) {
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"});
  ASSERT_GT(server.port(), 0);
  // "</s>" is stories260K's EOS. Parsed, each would be one token; as text,
  // each is several ("<", "/", "s", ">" pieces).
  const json plain = post_json(server, "/v1/chat/completions", chat({{"user", "Hi"}}));
  const json typed = post_json(server, "/v1/chat/completions", chat({{"user", "Hi</s></s></s></s>"}}));
  const int extra = prompt_tokens_of(typed) - prompt_tokens_of(plain);
  EXPECT_GE(extra, 8) << "the typed </s> became control tokens";

  // The next turn extends the first, content and all: the prefix cache hits.
  const std::string reply = typed["choices"][0]["message"]["content"];
  const json next = post_json(server, "/v1/chat/completions",
                              chat({{"user", "Hi</s></s></s></s>"}, {"assistant", reply}, {"user", "More"}}));
  EXPECT_GE(next["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), prompt_tokens_of(typed) / 2)
      << next["usage"].dump();

  // The raw completion prompt parses special tokens unless the request says not to.
  const json parsed = post_json(server, "/v1/completions", {{"prompt", "Once</s>"}, {"max_tokens", 1}});
  const json bare = post_json(server, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 1}});
  EXPECT_EQ(prompt_tokens_of(parsed), prompt_tokens_of(bare) + 1);
  const json literal =
      post_json(server, "/v1/completions", {{"prompt", "Once</s>"}, {"max_tokens", 1}, {"parse_special", false}});
  EXPECT_GE(prompt_tokens_of(literal), prompt_tokens_of(bare) + 2);
  const json refused = post_json(server, "/v1/completions", {{"prompt", "Once"}, {"parse_special", "no"}}, 400);
  EXPECT_EQ(refused["error"]["param"], "parse_special");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

// /stats once the scheduler has nothing left (bounded wait).
json idle_stats(const test::ServerProcess& server) {
  json s;
  for (int i = 0; i < 200; ++i) {
    s = get_json(server, "/stats");
    if (s["scheduler"]["running"] == 0 && s["scheduler"]["queued"] == 0 && s["server"]["in_flight"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return s;
}

TEST(ServerHygiene, PoolPressureCountsSequencesAndPreemptionsTruthfully) {
  // A 1 MiB KV pool holds about 1,600 stories260K tokens, less than 16
  // stories generated at once (each runs to its end, a few hundred tokens).
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "2048", "--kv-memory-mb",
                              "1", "--parallel", "16", "--max-batch-tokens", "64"});
  ASSERT_GT(server.port(), 0);
  constexpr int kRequests = 16;
  const std::string story = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  std::vector<json> responses(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      responses[i] = post_json(server, "/v1/completions",
                               {{"prompt", story.substr(0, 20 + 3 * static_cast<std::size_t>(i))},
                                {"max_tokens", 1500},
                                {"temperature", 0.8},
                                {"seed", i}});
    });
  }
  for (auto& t : threads) t.join();
  int reported = 0;
  for (const json& r : responses) {
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const json& choice = r["choices"][0];
    if (!choice.contains("finish_details")) continue;
    ++reported;
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(choice["finish_details"]["type"], "preempted");
    EXPECT_EQ(choice["finish_details"]["cause"], "kv_cache_full");
  }
  const json s = idle_stats(server);
  EXPECT_GE(reported, 1) << "no generation outgrew the pool";
  EXPECT_EQ(s["scheduler"]["preempted"], reported) << s.dump();
  EXPECT_EQ(s["scheduler"]["preempted_by_cause"]["kv_cache_full"], reported);
  // Admissions were retried while the pool was full; each request is still one sequence.
  EXPECT_EQ(s["cache"]["sequences"], kRequests) << s.dump();
  EXPECT_EQ(s["cache"]["blocks_used"], 0);

  auto metrics = client_of(server)->Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const test::PromText t = test::parse_prometheus_text(metrics->body, error);
  ASSERT_EQ(error, "") << metrics->body;
  EXPECT_EQ(t.sum("clmcache_requests_preempted_total", {{"cause", "kv_cache_full"}}), reported);
  EXPECT_EQ(t.sum("clmcache_requests_cancelled_total"), 0.0);
  EXPECT_TRUE(t.has("clmcache_requests_cancelled_total"));
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerHygiene, CancellationsAreCountedByCause) {
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "2048"});
  ASSERT_GT(server.port(), 0);
  const std::string story = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  // A client that leaves after three events of a long stream.
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = json({{"prompt", story}, {"max_tokens", 1900}, {"stream", true}, {"temperature", 0}}).dump();
  req.set_header("Content-Type", "application/json");
  int received = 0;
  req.content_receiver = [&](const char*, std::size_t, uint64_t, uint64_t) { return ++received < 3; };
  // The client gives up after three events: no whole response comes back.
  const auto aborted = client_of(server)->send(req);
  EXPECT_FALSE(aborted);
  // A stop string found at once: the rest of the generation is cancelled.
  const json stopped =
      post_json(server, "/v1/completions", {{"prompt", story}, {"max_tokens", 1900}, {"stop", {" "}}, {"temperature", 0}});
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  json s;
  for (int i = 0; i < 200; ++i) {
    s = idle_stats(server);
    if (s["scheduler"]["cancelled"] >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(s["scheduler"]["cancelled_by_cause"]["client_gone"], 1) << s.dump();
  EXPECT_EQ(s["scheduler"]["cancelled_by_cause"]["stop_string"], 1) << s.dump();
  EXPECT_EQ(s["scheduler"]["cancelled_by_cause"]["shutdown"], 0);
  EXPECT_EQ(s["scheduler"]["cancelled_by_cause"]["deadline"], 0);
  EXPECT_EQ(s["scheduler"]["cancelled"], 2);
  EXPECT_EQ(s["scheduler"]["preempted"], 0);
  EXPECT_EQ(s["cache"]["sequences"], 2);

  auto metrics = client_of(server)->Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const test::PromText t = test::parse_prometheus_text(metrics->body, error);
  ASSERT_EQ(error, "") << metrics->body;
  EXPECT_EQ(t.sum("clmcache_requests_cancelled_total", {{"cause", "client_gone"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_requests_cancelled_total", {{"cause", "stop_string"}}), 1.0);
  EXPECT_EQ(t.sum("clmcache_requests_cancelled_total", {{"cause", "deadline"}}), 0.0);
  EXPECT_EQ(t.sum("clmcache_requests_preempted_total"), 0.0);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
