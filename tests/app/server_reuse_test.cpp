// Drives the real `clmcache serve` over HTTP for what an evaluator and a
// cache-aware client need: token-id prompts scored with echo + logprobs and
// max_tokens 0, the `reuse` field of each request, and the usage breakdown
// (prefix, shift, recomputed, computed) in responses, /stats and /metrics.
// A prompt position whose predecessor's K/V was reused has no distribution:
// its logprob is null, so a prompt of n tokens with c of them reused shows
// exactly 1 + c nulls (the first token has nothing before it).
#include <gtest/gtest.h>

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/reuse_plan.h"
#include "support/float_text.h"
#include "support/prometheus_text.h"
#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

// Texts no other test sends, so that what the cache holds is what these
// tests put there.
const char* kScoreText =
    "Tom had a small blue boat. Every morning he took it to the pond and watched it float. "
    "One windy day the boat sailed far away, and Tom ran along the shore to catch it.";
const char* kSpanText =
    "The old owl lived in a tall tree at the edge of the forest. At night she flew over the fields "
    "and looked for mice, and in the day she slept with one eye open.";

std::vector<std::string> model_args() { return {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"}; }

std::unique_ptr<httplib::Client> client_for(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_read_timeout(120, 0);
  return c;
}

json post_ok(int port, const std::string& path, const json& body) {
  auto res = client_for(port)->Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return json::object();
  EXPECT_EQ(res->status, 200) << res->body;
  json j = json::parse(res->body, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// A request that scores `prompt` (text or ids) without generating.
json score_body(const json& prompt, const char* reuse, int top) {
  return {{"prompt", prompt},        {"echo", true},  {"logprobs", top},
          {"max_tokens", 0},         {"reuse", reuse}, {"return_tokens_as_token_ids", true},
          {"temperature", 0}};
}

std::vector<int32_t> ids_of_tokens(const json& tokens) {
  std::vector<int32_t> ids;
  for (const auto& t : tokens) {
    const std::string s = t.get<std::string>();
    EXPECT_TRUE(s.starts_with("token_id:")) << s;
    ids.push_back(std::stoi(s.substr(9)));
  }
  return ids;
}

int cached_of(const json& r) { return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(); }
const json& reuse_of(const json& r) { return r["usage"]["prompt_tokens_details"]["reuse"]; }

int null_count(const json& values) {
  return static_cast<int>(std::count_if(values.begin(), values.end(), [](const json& v) { return v.is_null(); }));
}

// What every scoring response must satisfy, whatever was reused.
void check_scored(const json& r, const std::vector<int32_t>& ids, int top) {
  SCOPED_TRACE(r.dump().substr(0, 400));
  ASSERT_EQ(r["choices"].size(), 1u);
  const json& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  const json& u = r["usage"];
  EXPECT_EQ(u["prompt_tokens"], ids.size());
  EXPECT_EQ(u["completion_tokens"], 0);
  // The breakdown covers the prompt, and cached_tokens is its reused part.
  const json& reuse = u["prompt_tokens_details"]["reuse"];
  EXPECT_EQ(reuse["prefix"].get<int>() + reuse["shift"].get<int>() + reuse["recomputed"].get<int>() +
                reuse["computed"].get<int>(),
            static_cast<int>(ids.size()));
  EXPECT_EQ(cached_of(r), reuse["prefix"].get<int>() + reuse["shift"].get<int>());

  const json& lp = choice["logprobs"];
  ASSERT_TRUE(lp.is_object());
  EXPECT_EQ(ids_of_tokens(lp["tokens"]), ids);
  ASSERT_EQ(lp["token_logprobs"].size(), ids.size());
  ASSERT_EQ(lp["top_logprobs"].size(), ids.size());
  ASSERT_EQ(lp["text_offset"].size(), ids.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(null_count(lp["token_logprobs"]), 1 + cached_of(r));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    const json& value = lp["token_logprobs"][i];
    const json& alternatives = lp["top_logprobs"][i];
    ASSERT_EQ(value.is_null(), alternatives.is_null());
    if (value.is_null()) continue;
    EXPECT_LE(value.get<double>(), 0.0);
    // A float's shortest decimal: it reads back as the float computed.
    EXPECT_TRUE(test::written_as_float(value.get<double>())) << value;
    ASSERT_EQ(alternatives.size(), static_cast<std::size_t>(top));
    for (const auto& [token, alt] : alternatives.items()) {
      EXPECT_TRUE(token.starts_with("token_id:")) << token;
      EXPECT_LE(alt.get<double>(), 0.0);
      EXPECT_TRUE(test::written_as_float(alt.get<double>())) << alt;
    }
    // The prompt's own token, when among the most likely, has its value.
    const std::string own = "token_id:" + std::to_string(ids[i]);
    if (alternatives.contains(own)) {
      EXPECT_EQ(alternatives[own], value);
    }
  }
}

class ServerReuseTest : public test::SharedServerTest<ServerReuseTest> {
 public:
  static std::vector<std::string> server_args() { return model_args(); }
  static json post(const std::string& path, const json& body) { return post_ok(port(), path, body); }

  // The ids the server's tokenizer gives `text` (BOS included), read from an
  // echo with token-id names.
  static std::vector<int32_t> tokenize(const std::string& text) {
    const json r = post("/v1/completions", score_body(text, "off", 0));
    return ids_of_tokens(r["choices"][0]["logprobs"]["tokens"]);
  }

};

TEST_F(ServerReuseTest, ScoresATokenIdPromptWithoutGenerating) {
  const json by_text = post("/v1/completions", score_body(kScoreText, "off", 2));
  const std::vector<int32_t> ids = ids_of_tokens(by_text["choices"][0]["logprobs"]["tokens"]);
  ASSERT_GT(ids.size(), 40u);
  check_scored(by_text, ids, 2);
  // Echo returns the prompt's text, and nothing else: no token was generated.
  EXPECT_EQ(by_text["choices"][0]["text"], kScoreText);
  // With reuse off every prompt token's predecessor was computed.
  EXPECT_EQ(cached_of(by_text), 0);
  EXPECT_EQ(reuse_of(by_text)["computed"], ids.size());
  EXPECT_EQ(null_count(by_text["choices"][0]["logprobs"]["token_logprobs"]), 1);

  // The same prompt as ids, flat and as the one prompt of a batch: same
  // text (decoded), same tokens, same numbers.
  for (const json& prompt : {json(ids), json::array({json(ids)})}) {
    const json by_ids = post("/v1/completions", score_body(prompt, "off", 2));
    check_scored(by_ids, ids, 2);
    EXPECT_EQ(by_ids["choices"][0]["text"], kScoreText);
    EXPECT_EQ(by_ids["choices"][0]["logprobs"]["token_logprobs"], by_text["choices"][0]["logprobs"]["token_logprobs"]);
    EXPECT_EQ(by_ids["choices"][0]["logprobs"]["top_logprobs"], by_text["choices"][0]["logprobs"]["top_logprobs"]);
  }

  // Without return_tokens_as_token_ids, tokens are text and the offsets
  // count it.
  json plain = score_body(ids, "off", 1);
  plain.erase("return_tokens_as_token_ids");
  const json text_tokens = post("/v1/completions", plain)["choices"][0]["logprobs"];
  ASSERT_EQ(text_tokens["tokens"].size(), ids.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(text_tokens["text_offset"][i], offset) << i;
    offset += text_tokens["tokens"][i].get<std::string>().size();
  }
}

TEST_F(ServerReuseTest, PromptLogprobsAgreeWithTheNextTokenDistribution) {
  const std::vector<int32_t> ids = tokenize(kScoreText);
  ASSERT_GT(ids.size(), 10u);
  const json scored = post("/v1/completions", score_body(ids, "off", 5));
  check_scored(scored, ids, 5);
  // Position i is predicted from ids[0, i): the same distribution a
  // generation from that prefix samples its first token from.
  for (std::size_t i : {std::size_t{1}, ids.size() / 2, ids.size() - 1}) {
    SCOPED_TRACE(i);
    const std::vector<int32_t> head(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i));
    const json gen = post("/v1/completions", {{"prompt", head},
                                              {"max_tokens", 1},
                                              {"logprobs", 5},
                                              {"temperature", 0},
                                              {"reuse", "off"},
                                              {"return_tokens_as_token_ids", true}});
    const json& want = gen["choices"][0]["logprobs"]["top_logprobs"][0];
    const json& got = scored["choices"][0]["logprobs"]["top_logprobs"][i];
    ASSERT_TRUE(got.is_object());
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [token, lp] : want.items()) {
      ASSERT_TRUE(got.contains(token)) << token << " " << got.dump();
      EXPECT_NEAR(got[token].get<double>(), lp.get<double>(), 1e-5) << token;
    }
  }
}

TEST_F(ServerReuseTest, ReusedPromptPositionsHaveNoLogprobs) {
  // A prompt nobody has sent, not even its first token (every other prompt
  // starts with BOS): the tokens of a known text, reversed.
  std::vector<int32_t> ids = tokenize(kScoreText);
  std::reverse(ids.begin(), ids.end());
  ASSERT_GT(ids.size(), 40u);  // more than one 32-token block

  const json first = post("/v1/completions", score_body(ids, "prefix", 3));
  check_scored(first, ids, 3);
  EXPECT_EQ(cached_of(first), 0);
  EXPECT_EQ(reuse_of(first)["computed"], ids.size());

  const json second = post("/v1/completions", score_body(ids, "prefix", 3));
  check_scored(second, ids, 3);
  const int cached = cached_of(second);
  EXPECT_GE(cached, 32);  // at least the first whole block
  EXPECT_LT(cached, static_cast<int>(ids.size()));  // the last token is always computed
  EXPECT_EQ(reuse_of(second)["prefix"], cached);
  EXPECT_EQ(reuse_of(second)["shift"], 0);
  // An exact prefix is reused, so positions 1..cached lose their logprob and
  // the rest are what a cold run computes, bit for bit.
  const json& a = first["choices"][0]["logprobs"];
  const json& b = second["choices"][0]["logprobs"];
  for (std::size_t i = 1; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    if (static_cast<int>(i) <= cached) {
      EXPECT_TRUE(b["token_logprobs"][i].is_null());
      EXPECT_TRUE(b["top_logprobs"][i].is_null());
    } else {
      EXPECT_EQ(b["token_logprobs"][i], a["token_logprobs"][i]);
      EXPECT_EQ(b["top_logprobs"][i], a["top_logprobs"][i]);
    }
  }

  // A client that wants every position scored asks for no reuse.
  const json off = post("/v1/completions", score_body(ids, "off", 3));
  check_scored(off, ids, 3);
  EXPECT_EQ(cached_of(off), 0);
  EXPECT_EQ(reuse_of(off)["computed"], ids.size());
  EXPECT_EQ(null_count(off["choices"][0]["logprobs"]["token_logprobs"]), 1);
  EXPECT_EQ(off["choices"][0]["logprobs"]["token_logprobs"], a["token_logprobs"]);
}

TEST_F(ServerReuseTest, ShiftReusesASpanAtAnotherPosition) {
  // One span after two different heads: with shift, the second request
  // copies the span from the first instead of computing it.
  const std::vector<int32_t> text = tokenize(kSpanText);
  ASSERT_GT(text.size(), 40u);
  const std::vector<int32_t> span(text.begin() + 1, text.end());
  const std::vector<int32_t> score = tokenize(kScoreText);
  auto with_head = [&](std::size_t head_tokens) {
    std::vector<int32_t> ids(score.begin(), score.begin() + static_cast<std::ptrdiff_t>(head_tokens));
    ids.insert(ids.end(), span.begin(), span.end());
    return ids;
  };
  const std::vector<int32_t> a = with_head(6), b = with_head(11), c = with_head(15);

  const json first = post("/v1/completions", score_body(a, "shift", 1));
  check_scored(first, a, 1);
  const json second = post("/v1/completions", score_body(b, "shift", 1));
  check_scored(second, b, 1);
  EXPECT_GT(reuse_of(second)["shift"].get<int>(), 0) << second["usage"].dump();
  // Prefix mode never reuses a span at another position.
  const json exact = post("/v1/completions", score_body(c, "prefix", 1));
  check_scored(exact, c, 1);
  EXPECT_EQ(reuse_of(exact)["shift"], 0);
  EXPECT_EQ(reuse_of(exact)["recomputed"], 0);
}

TEST_F(ServerReuseTest, BlendRecomputesPartOfAReorderedPromptAndSaysSo) {
  // Two chunks cached in one order and asked in the other: blend copies
  // both, probes them, and recomputes the requested share.
  const std::vector<int32_t> one = tokenize(kSpanText), two = tokenize(kScoreText);
  auto cat = [](std::vector<int32_t> a, const std::vector<int32_t>& b, std::size_t from) {
    a.insert(a.end(), b.begin() + static_cast<std::ptrdiff_t>(from), b.end());
    return a;
  };
  const std::vector<int32_t> warm = cat(two, one, 1), asked = cat(one, two, 1);
  post("/v1/completions", score_body(warm, "prefix", 1));
  json body = score_body(asked, "blend", 1);
  body["blend_ratio"] = 0.5;
  const json blended = post("/v1/completions", body);
  check_scored(blended, asked, 1);
  const json& r = reuse_of(blended);
  const json& details = blended["usage"]["prompt_tokens_details"];
  EXPECT_GT(r["shift"].get<int>(), 10) << details.dump();
  EXPECT_GT(r["recomputed"].get<int>(), 10) << details.dump();
  EXPECT_GE(details["blend_probed"].get<int>(), r["shift"].get<int>() + r["recomputed"].get<int>());
  EXPECT_GT(details["prefill_flops"].get<double>(), 0.0);
  auto stats = client_for(port())->Get("/stats");
  ASSERT_TRUE(stats);
  const json s = json::parse(stats->body);
  EXPECT_GE(s["scheduler"]["blend_probed_tokens"].get<int>(), details["blend_probed"].get<int>());
  EXPECT_GT(s["scheduler"]["blend_recomputed_tokens"].get<int>(), 0);
  EXPECT_GT(s["scheduler"]["prefill_flops"].get<double>(), 0.0);
  // The float setting as it was set: 0.15, not 0.15000000596046448.
  EXPECT_NE(stats->body.find("\"blend_ratio\":0.15,"), std::string::npos) << stats->body;
  EXPECT_EQ(static_cast<float>(s["reuse"]["blend_ratio"].get<double>()), ReuseOptions{}.blend_ratio);
  EXPECT_EQ(s["reuse"]["blend_layer"].get<int>(), ReuseOptions{}.blend_layer);
  auto metrics = client_for(port())->Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const test::PromText t = test::parse_prometheus_text(metrics->body, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(t.sum("clmcache_blend_probed_tokens_total"), s["scheduler"]["blend_probed_tokens"].get<double>());
  EXPECT_GT(t.sum("clmcache_blend_recomputed_tokens_total"), 0.0);
}

TEST_F(ServerReuseTest, ChatAndStreamsReportTheBreakdown) {
  const json chat_body = {{"messages", {{{"role", "user"}, {"content", kSpanText}}}},
                          {"max_tokens", 4},
                          {"temperature", 0},
                          {"reuse", "off"}};
  const json chat = post("/v1/chat/completions", chat_body);
  EXPECT_EQ(cached_of(chat), 0);
  EXPECT_EQ(reuse_of(chat)["computed"], chat["usage"]["prompt_tokens"]);

  json body = {{"prompt", kSpanText},
               {"max_tokens", 4},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  auto res = client_for(port())->Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  // The usage chunk is the one before [DONE].
  const std::string tail = "\n\ndata: [DONE]\n\n";
  ASSERT_TRUE(res->body.ends_with(tail));
  const std::string before = res->body.substr(0, res->body.size() - tail.size());
  const json usage = json::parse(before.substr(before.rfind("data: ") + 6))["usage"];
  const json& r = usage["prompt_tokens_details"]["reuse"];
  EXPECT_EQ(r["prefix"].get<int>() + r["shift"].get<int>() + r["recomputed"].get<int>() + r["computed"].get<int>(),
            usage["prompt_tokens"].get<int>())
      << usage.dump();
  EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"].get<int>(), r["prefix"].get<int>() + r["shift"].get<int>());
}

TEST_F(ServerReuseTest, BadFieldsAreRefusedByName) {
  auto error = [&](const std::string& path, const json& body, int status, const std::string& param) {
    auto res = client_for(port())->Post(path.c_str(), body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    const json j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << res->body;
    EXPECT_EQ(j["error"]["param"], param) << res->body;
  };
  error("/v1/completions", {{"prompt", "x"}, {"reuse", "mix"}}, 400, "reuse");
  error("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"reuse", 1}}, 400, "reuse");
  error("/v1/completions", {{"prompt", "x"}, {"blend_ratio", 2}}, 400, "blend_ratio");
  error("/v1/completions", {{"prompt", "x"}, {"blend_ratio", "most"}}, 400, "blend_ratio");
  // stories260K has 512 tokens.
  error("/v1/completions", {{"prompt", {1, 512}}}, 400, "prompt");
  error("/v1/completions", {{"prompt", {1, -3}}}, 400, "prompt");
  error("/v1/completions", {{"prompt", {1, 2.5}}}, 400, "prompt");
  error("/v1/completions", {{"prompt", json::array({json::array()})}}, 400, "prompt");
  error("/v1/completions", {{"prompt", std::vector<int>(600, 5)}}, 400, "prompt");  // longer than -c 512
  error("/v1/completions", {{"prompt", "x"}, {"echo", true}, {"stream", true}}, 422, "echo");
  error("/v1/completions", {{"prompt", "x"}, {"echo", true}, {"logprobs", 21}}, 400, "logprobs");
  // A request for zero tokens without echo just computes (and caches) its prompt.
  const json zero = post("/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 0}});
  EXPECT_EQ(zero["choices"][0]["text"], "");
  EXPECT_EQ(zero["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(zero["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(zero["usage"]["completion_tokens"], 0);
}

TEST_F(ServerReuseTest, StatsAndMetricsCountReuse) {
  post("/v1/completions", {{"prompt", kScoreText}, {"max_tokens", 1}});
  const json repeat = post("/v1/completions", {{"prompt", kScoreText}, {"max_tokens", 1}});
  ASSERT_GT(cached_of(repeat), 0);
  auto res = client_for(port())->Get("/stats");
  ASSERT_TRUE(res);
  const json s = json::parse(res->body);
  for (const char* key : {"shifted_tokens", "recomputed_tokens", "spans_reused", "plans_stale", "reuse_rate"})
    EXPECT_TRUE(s["cache"].contains(key)) << key;
  EXPECT_GT(s["cache"]["reuse_rate"].get<double>(), 0.0);
  EXPECT_EQ(s["reuse"]["mode"], "prefix");
  EXPECT_EQ(s["reuse"]["min_reuse_tokens"], ReuseOptions{}.min_reuse_tokens);
  EXPECT_EQ(s["reuse"]["window"], ReuseOptions{}.window);
  EXPECT_EQ(s["reuse"]["lead"], ReuseOptions{}.lead);

  auto metrics = client_for(port())->Get("/metrics");
  ASSERT_TRUE(metrics);
  std::string error;
  const test::PromText t = test::parse_prometheus_text(metrics->body, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(t.types.at("clmcache_prompt_tokens_by_reuse_total"), "counter");
  EXPECT_TRUE(t.has("clmcache_kv_reuse_rate"));
  EXPECT_TRUE(t.has("clmcache_kv_spans_reused_total"));
  EXPECT_TRUE(t.has("clmcache_kv_plans_stale_total"));
  // Every prompt token of every finished generation is counted under one kind.
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total"), t.sum("clmcache_prompt_tokens_total"));
  EXPECT_GT(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "prefix"}}), 0.0);
  EXPECT_EQ(t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "prefix"}}) +
                t.sum("clmcache_prompt_tokens_by_reuse_total", {{"kind", "shift"}}),
            t.sum("clmcache_cached_tokens_total"));
}

// The request's field overrides the server's default in either direction.
TEST(ServerReuseDefault, RequestFieldOverridesTheServerDefault) {
  auto args = model_args();
  args.insert(args.end(), {"--reuse", "off"});
  test::ServerProcess server(args);
  ASSERT_GT(server.port(), 0);
  const json body = {{"prompt", kScoreText}, {"max_tokens", 1}, {"temperature", 0}};
  const json first = post_ok(server.port(), "/v1/completions", body);
  const json second = post_ok(server.port(), "/v1/completions", body);
  EXPECT_EQ(cached_of(first), 0);
  EXPECT_EQ(cached_of(second), 0);  // the server's default: nothing reused
  json asks = body;
  asks["reuse"] = "prefix";
  const json third = post_ok(server.port(), "/v1/completions", asks);
  EXPECT_GE(cached_of(third), 32) << third["usage"].dump();
  EXPECT_EQ(third["choices"][0]["text"], first["choices"][0]["text"]);
  auto stats = client_for(server.port())->Get("/stats");
  ASSERT_TRUE(stats);
  EXPECT_EQ(json::parse(stats->body)["reuse"]["mode"], "off");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
