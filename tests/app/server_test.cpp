// Drives the real `clmcache serve` over HTTP with the stories260K model:
// every route, streamed and whole answers, errors in the OpenAI shape, prefix
// cache hits in usage, Prometheus text, concurrent clients that hang up, and
// a SIGTERM shutdown.
#include <gtest/gtest.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/prometheus_text.h"
#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
    "One day, she saw a big red ball in the park.";

std::vector<std::string> model_args() { return {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"}; }

// The events of an SSE body: the payload of each "data: " line, in order.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string event = body.substr(at, end - at);
    if (event.starts_with("data: ")) out.push_back(event.substr(6));
    at = end + 2;
  }
  return out;
}

// Checks a finished stream and returns its text, finish reason and usage.
struct StreamResult {
  std::string text;
  std::string finish_reason;
  json usage;
  int chunks = 0;
};

StreamResult check_stream(const std::string& body, bool chat) {
  StreamResult r;
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n")) << body.substr(body.size() > 200 ? body.size() - 200 : 0);
  const auto events = sse_payloads(body);
  EXPECT_FALSE(events.empty());
  std::string id;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const json j = json::parse(events[i], nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << events[i];
    if (j.is_discarded()) continue;
    EXPECT_FALSE(j.contains("error")) << events[i];
    EXPECT_EQ(j["object"], chat ? "chat.completion.chunk" : "text_completion");
    if (id.empty()) id = j["id"];
    EXPECT_EQ(j["id"], id);
    if (j.contains("usage") && !j["usage"].is_null()) {
      r.usage = j["usage"];
      EXPECT_TRUE(j["choices"].empty());
      continue;
    }
    ++r.chunks;
    const json& c = j["choices"][0];
    if (chat) {
      if (i == 0) {
        EXPECT_EQ(c["delta"]["role"], "assistant");
      }
      if (c["delta"].contains("content")) r.text += c["delta"]["content"].get<std::string>();
    } else {
      r.text += c["text"].get<std::string>();
    }
    if (!c["finish_reason"].is_null()) {
      EXPECT_TRUE(r.finish_reason.empty()) << "two finish reasons";
      r.finish_reason = c["finish_reason"];
    }
  }
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_TRUE(r.finish_reason == "stop" || r.finish_reason == "length") << r.finish_reason;
  return r;
}

void expect_error(const httplib::Result& res, int status, const std::string& code) {
  ASSERT_TRUE(res) << "no response";
  EXPECT_EQ(res->status, status) << res->body;
  const json j = json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  ASSERT_TRUE(j.contains("error")) << res->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_EQ(j["error"]["code"], code) << res->body;
}

class ServerTest : public test::SharedServerTest<ServerTest> {
 public:
  // After every test (hang-ups included) it still shuts down cleanly.
  static std::vector<std::string> server_args() { return model_args(); }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_read_timeout(120, 0);
    return c;
  }
  httplib::Result post(const std::string& path, const json& body) const {
    return client()->Post(path.c_str(), body.dump(), "application/json");
  }
  json post_ok(const std::string& path, const json& body) const {
    auto res = post(path, body);
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body, nullptr, false);
  }
  json get_json(const std::string& path) const {
    auto res = client()->Get(path.c_str());
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body, nullptr, false);
  }

};

TEST_F(ServerTest, HealthModelsAndPage) {
  EXPECT_EQ(get_json("/health")["status"], "ok");
  const json models = get_json("/v1/models");
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(models["data"][0]["object"], "model");
  auto page = client()->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
}

TEST_F(ServerTest, CompletionWholeAndCachedOnRepeat) {
  const json body = {{"model", "stories260K"}, {"prompt", kStory}, {"max_tokens", 12}, {"temperature", 0}};
  const json a = post_ok("/v1/completions", body);
  EXPECT_EQ(a["object"], "text_completion");
  EXPECT_TRUE(a["id"].get<std::string>().starts_with("cmpl-"));
  ASSERT_EQ(a["choices"].size(), 1u);
  EXPECT_TRUE(a["choices"][0]["text"].is_string());
  EXPECT_TRUE(a["choices"][0]["finish_reason"] == "length" || a["choices"][0]["finish_reason"] == "stop");
  const json& u = a["usage"];
  EXPECT_GT(u["prompt_tokens"].get<int>(), 32);
  EXPECT_GE(u["completion_tokens"].get<int>(), 1);
  EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  const json b = post_ok("/v1/completions", body);
  // The prompt is longer than a KV block, so the second request attaches
  // at least one block from the prefix cache; greedy output is unchanged.
  EXPECT_GT(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
}

TEST_F(ServerTest, StreamedCompletionMatchesWhole) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}};
  const json whole = post_ok("/v1/completions", body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto res = post("/v1/completions", body);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const StreamResult s = check_stream(res->body, false);
  EXPECT_EQ(s.text, whole["choices"][0]["text"].get<std::string>());
  EXPECT_EQ(s.finish_reason, whole["choices"][0]["finish_reason"].get<std::string>());
  ASSERT_TRUE(s.usage.is_object());
  EXPECT_EQ(s.usage["completion_tokens"], whole["usage"]["completion_tokens"]);
}

TEST_F(ServerTest, ChatWholeAndStreamed) {
  json body = {{"messages", {{{"role", "system"}, {"content", "Tell stories."}}, {{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 16},
               {"temperature", 0}};
  const json whole = post_ok("/v1/chat/completions", body);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_TRUE(whole["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(whole["choices"][0]["message"]["content"].is_string());
  body["stream"] = true;
  auto res = post("/v1/chat/completions", body);
  ASSERT_TRUE(res);
  const StreamResult s = check_stream(res->body, true);
  EXPECT_EQ(s.text, whole["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_TRUE(s.usage.is_null());  // not asked for
}

TEST_F(ServerTest, StopStringCutsTheText) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}};
  const std::string full = post_ok("/v1/completions", base)["choices"][0]["text"];
  ASSERT_GT(full.size(), 12u) << full;
  const std::string stop = full.substr(8, 3);
  const std::string want = full.substr(0, full.find(stop));
  json body = base;
  body["stop"] = {stop};
  const json cut = post_ok("/v1/completions", body);
  EXPECT_EQ(cut["choices"][0]["text"], want);
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  auto res = post("/v1/completions", body);
  ASSERT_TRUE(res);
  const StreamResult s = check_stream(res->body, false);
  EXPECT_EQ(s.text, want);
  EXPECT_EQ(s.finish_reason, "stop");
}

TEST_F(ServerTest, Logprobs) {
  const json chat = post_ok("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                                     {"max_tokens", 5},
                                                     {"logprobs", true},
                                                     {"top_logprobs", 2}});
  const json& content = chat["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), chat["usage"]["completion_tokens"].get<std::size_t>());
  for (const auto& t : content) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
  }
  const json comp = post_ok("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}, {"logprobs", 3}});
  const json& lp = comp["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), comp["usage"]["completion_tokens"].get<std::size_t>());
  EXPECT_EQ(lp["top_logprobs"][0].size(), 3u);
}

TEST_F(ServerTest, ErrorsInOpenAiShape) {
  auto c = client();
  expect_error(c->Post("/v1/completions", "{not json", "application/json"), 400, "invalid_json");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}), 400, "invalid_type");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", -1}}), 400, "out_of_range");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"model", "gpt-4"}}), 404, "model_not_found");
  expect_error(post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"n", 3}}), 422,
               "unsupported_value");
  expect_error(post("/v1/chat/completions", {{"prompt", "x"}}), 400, "missing_field");
  expect_error(c->Get("/v1/nothing"), 404, "not_found");
  expect_error(post("/v1/completions", {{"prompt", std::string(3000, 'a')}}), 400, "context_length_exceeded");
  // The server is still fine after all of that.
  EXPECT_EQ(get_json("/health")["status"], "ok");
}

TEST_F(ServerTest, SessionsReuseTheirHistory) {
  json body = {{"messages", {{{"role", "user"}, {"content", kStory}}}}, {"max_tokens", 24}, {"temperature", 0},
               {"session_id", "conv-1"}};
  const json first = post_ok("/v1/chat/completions", body);
  const std::string reply = first["choices"][0]["message"]["content"];
  body["messages"].push_back({{"role", "assistant"}, {"content", reply}});
  body["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  const json second = post_ok("/v1/chat/completions", body);
  // The whole blocks of the first turn, prompt and reply, are resident (the
  // last generated token was never fed back, so it has no K/V).
  ASSERT_EQ(first["choices"][0]["finish_reason"], "length");
  const int first_turn = first["usage"]["prompt_tokens"].get<int>() + first["usage"]["completion_tokens"].get<int>() - 1;
  EXPECT_GE(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), first_turn / 32 * 32);
  EXPECT_GT(get_json("/stats")["server"]["sessions"].get<int>(), 0);
}

TEST_F(ServerTest, MetricsParseAsPrometheusText) {
  post_ok("/v1/completions", {{"prompt", kStory}, {"max_tokens", 3}});
  // Requests are counted by the HTTP library's logger, which runs just after
  // a response has been written, so the count may trail the client by a
  // moment: read /metrics until it shows the request (bounded).
  test::PromText t;
  int status = 0;
  std::string content_type;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto res = client()->Get("/metrics");
    ASSERT_TRUE(res);
    status = res->status;
    content_type = res->get_header_value("Content-Type");
    std::string error;
    t = test::parse_prometheus_text(res->body, error);
    ASSERT_EQ(error, "") << res->body;
    if (t.sum("clmcache_requests_total", {{"endpoint", "/v1/completions"}, {"status", "200"}}) >= 1.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);
  EXPECT_NE(content_type.find("text/plain"), std::string::npos);
  EXPECT_GE(t.sum("clmcache_requests_total", {{"endpoint", "/v1/completions"}, {"status", "200"}}), 1.0);
  EXPECT_GT(t.sum("clmcache_prompt_tokens_total"), 0.0);
  EXPECT_GT(t.sum("clmcache_generated_tokens_total"), 0.0);
  EXPECT_GE(t.sum("clmcache_time_to_first_token_seconds_count"), 1.0);
  EXPECT_GE(t.sum("clmcache_request_duration_seconds_count"), 1.0);
  EXPECT_GT(t.sum("clmcache_kv_blocks"), 0.0);
  EXPECT_TRUE(t.has("clmcache_kv_block_hit_rate"));
  EXPECT_TRUE(t.has("clmcache_kv_memory_used_bytes"));
}

TEST_F(ServerTest, StatsJson) {
  const json s = get_json("/stats");
  const json& c = s["cache"];
  EXPECT_GT(c["blocks_total"].get<int>(), 0);
  EXPECT_EQ(c["blocks_used"].get<int>() + c["blocks_cached"].get<int>() + c["blocks_free"].get<int>(),
            c["blocks_total"].get<int>());
  EXPECT_TRUE(s["scheduler"].contains("running"));
  EXPECT_TRUE(s["scheduler"].contains("queued"));
}

// Waits (bounded) until no request runs or waits and no block is referenced.
json wait_idle(const ServerTest& t, std::function<json(const std::string&)> get) {
  json s;
  for (int i = 0; i < 400; ++i) {
    s = get("/stats");
    if (s["scheduler"]["running"] == 0 && s["scheduler"]["queued"] == 0 && s["cache"]["blocks_used"] == 0 &&
        s["server"]["in_flight"] == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (void)t;
  return s;
}

TEST_F(ServerTest, ConcurrentStreamsSomeDisconnecting) {
  constexpr int kClients = 16;
  const uint64_t generated_before = get_json("/stats")["scheduler"]["generated_tokens"];
  std::vector<std::string> bodies(kClients);
  std::vector<int> statuses(kClients, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      const bool hang_up = i % 3 == 0;
      json body = {{"prompt", std::string(kStory).substr(0, 20 + 5 * static_cast<std::size_t>(i))},
                   {"max_tokens", hang_up ? 200 : 24},
                   {"stream", true},
                   {"seed", i}};
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = body.dump();
      req.set_header("Content-Type", "application/json");
      int received = 0;
      req.content_receiver = [&, hang_up](const char* data, std::size_t n, uint64_t, uint64_t) {
        bodies[i].append(data, n);
        return !(hang_up && ++received >= 3);
      };
      auto res = client()->send(req);
      statuses[i] = res ? res->status : -1;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    if (i % 3 == 0) continue;
    SCOPED_TRACE(i);
    EXPECT_EQ(statuses[i], 200);
    check_stream(bodies[i], false);
  }
  const json s = wait_idle(*this, [this](const std::string& p) { return get_json(p); });
  EXPECT_EQ(s["scheduler"]["running"], 0);
  EXPECT_EQ(s["scheduler"]["queued"], 0);
  EXPECT_EQ(s["cache"]["blocks_used"], 0) << s.dump();
  EXPECT_EQ(s["server"]["in_flight"], 0);
  EXPECT_EQ(s["cache"]["blocks_cached"].get<int>() + s["cache"]["blocks_free"].get<int>(),
            s["cache"]["blocks_total"].get<int>());
  // Clients that hung up after 3 events had their generations cancelled: the
  // scheduler made far fewer tokens than their 200-token budgets.
  const int hang_ups = (kClients + 2) / 3;
  const uint64_t generated = s["scheduler"]["generated_tokens"].get<uint64_t>() - generated_before;
  EXPECT_LT(generated, static_cast<uint64_t>((kClients - hang_ups) * 24 + hang_ups * 60)) << generated;
}

TEST(ServerAuth, ApiKeyRequiredExceptOnPublicRoutes) {
  auto args = model_args();
  args.insert(args.end(), {"--api-key", "s3cret", "--max-body-bytes", "2048"});
  test::ServerProcess server(args);
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();
  expect_error(c.Post("/v1/completions", body, "application/json"), 401, "invalid_api_key");
  expect_error(c.Get("/v1/models"), 401, "invalid_api_key");
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
  httplib::Headers wrong = {{"Authorization", "Bearer nope"}};
  expect_error(c.Post("/v1/completions", wrong, body, "application/json"), 401, "invalid_api_key");
  httplib::Headers right = {{"Authorization", "Bearer s3cret"}};
  auto ok = c.Post("/v1/completions", right, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  const std::string big = json{{"prompt", std::string(4096, 'a')}}.dump();
  expect_error(c.Post("/v1/completions", right, big, "application/json"), 413, "request_too_large");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerBusy, FullQueueIs429WithRetryAfter) {
  auto args = model_args();
  args.insert(args.end(), {"--parallel", "1", "--max-queued", "1"});
  test::ServerProcess server(args);
  ASSERT_GT(server.port(), 0);
  // One request runs, one waits; the others arrive while those take at least
  // hundreds of tokens, so they find the queue full.
  constexpr int kClients = 8;
  std::vector<int> statuses(kClients, 0);
  std::vector<std::string> retry_after(kClients), bodies(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server.port());
      c.set_read_timeout(120, 0);
      const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"temperature", 0}};
      auto res = c.Post("/v1/completions", body.dump(), "application/json");
      if (!res) return;
      statuses[i] = res->status;
      retry_after[i] = res->get_header_value("Retry-After");
      bodies[i] = res->body;
    });
  }
  for (auto& t : threads) t.join();
  int busy = 0, ok = 0;
  for (int i = 0; i < kClients; ++i) {
    const json j = json::parse(bodies[i], nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << bodies[i];
    if (statuses[i] == 429) {
      ++busy;
      EXPECT_EQ(j["error"]["code"], "server_busy");
      EXPECT_FALSE(retry_after[i].empty());
    } else {
      EXPECT_EQ(statuses[i], 200) << bodies[i];
      EXPECT_EQ(j["object"], "text_completion");
      ++ok;
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(busy, 1);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerShutdown, SigtermEndsStreamsAndExitsZero) {
  auto args = model_args();
  args.insert(args.end(), {"--shutdown-grace", "0.2"});
  test::ServerProcess server(args);
  ASSERT_GT(server.port(), 0);
  std::string body;
  std::atomic<bool> started{false};
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
      body.append(data, n);
      started = true;
      return true;
    };
    c.send(req);
  });
  for (int i = 0; i < 400 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(server.terminate(30), 0) << server.log();
  reader.join();
  EXPECT_TRUE(started.load());
  // Finished in the grace period, or ended with an error event; either way
  // the stream was closed properly.
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n")) << body.substr(body.size() > 300 ? body.size() - 300 : 0);
}

}  // namespace
}  // namespace clm
