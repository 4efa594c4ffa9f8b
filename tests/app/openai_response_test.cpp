// Response formatting: the OpenAI object shapes for both endpoints, streaming
// chunks as SSE events, usage with cached tokens, and logprob layouts.
#include <gtest/gtest.h>

#include "app/openai_response.h"
#include "app/sse.h"

namespace clm {
namespace {

using nlohmann::json;

ResponseMeta meta(ApiEndpoint e) { return {e, make_response_id(e), 1700000000, "stories260K"}; }

TEST(OpenAiResponse, IdsHaveTheEndpointPrefixAndDiffer) {
  const std::string a = make_response_id(ApiEndpoint::Chat);
  EXPECT_TRUE(a.starts_with("chatcmpl-"));
  EXPECT_TRUE(make_response_id(ApiEndpoint::Completion).starts_with("cmpl-"));
  EXPECT_NE(a, make_response_id(ApiEndpoint::Chat));
}

TEST(OpenAiResponse, ChatCompletionObject) {
  const Usage usage{10, 4, 8, ReuseCounts{6, 2, 1, 1}};
  const json j = completion_response(meta(ApiEndpoint::Chat), "Hello", "stop", usage, nullptr);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "stories260K");
  EXPECT_EQ(j["created"], 1700000000);
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], 14);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["reuse"],
            json({{"prefix", 6}, {"shift", 2}, {"recomputed", 1}, {"computed", 1}}));
}

TEST(OpenAiResponse, TextCompletionObjectWithLogprobs) {
  const std::vector<TokenLogprob> lps = {{"Once", -0.5f, {{"Once", -0.5f}, {"The", -1.5f}}, std::nullopt},
                                         {" upon", -0.25f, {{" upon", -0.25f}}, std::nullopt}};
  const json j = completion_response(meta(ApiEndpoint::Completion), "Once upon", "length", {3, 2, 0, {}}, &lps);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Once upon");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"Once", " upon"}));
  EXPECT_EQ(lp["token_logprobs"], json({-0.5, -0.25}));
  EXPECT_EQ(lp["text_offset"], json({0, 4}));
  EXPECT_EQ(lp["top_logprobs"][0]["The"], -1.5);
}

TEST(OpenAiResponse, ChatLogprobsLayout) {
  const std::vector<TokenLogprob> lps = {{"Hi", -0.125f, {{"Hi", -0.125f}, {"Yo", -2.0f}}, std::nullopt}};
  const json j = completion_response(meta(ApiEndpoint::Chat), "Hi", "stop", {}, &lps);
  const json& c = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["token"], "Hi");
  EXPECT_EQ(c[0]["logprob"], -0.125);
  EXPECT_EQ(c[0]["bytes"], json({72, 105}));
  EXPECT_EQ(c[0]["top_logprobs"][1]["token"], "Yo");
}

// Logprobs are floats: each is written as the float's shortest decimal
// (-0.1, not the widened -0.10000000149011612), in both layouts and in
// stream chunks, and reads back as exactly that float.
TEST(OpenAiResponse, LogprobsAreWrittenAsTheirFloatsShortestDecimal) {
  const std::vector<TokenLogprob> lps = {{"Hi", -0.1f, {{"Hi", -0.1f}, {"Yo", -2.3025851f}}, std::nullopt}};
  const std::string chat = completion_response(meta(ApiEndpoint::Chat), "Hi", "stop", {}, &lps).dump();
  EXPECT_NE(chat.find("\"logprob\":-0.1,"), std::string::npos) << chat;
  EXPECT_NE(chat.find("\"logprob\":-2.3025851,"), std::string::npos) << chat;
  const std::string legacy = completion_response(meta(ApiEndpoint::Completion), "Hi", "stop", {}, &lps).dump();
  EXPECT_NE(legacy.find("\"token_logprobs\":[-0.1]"), std::string::npos) << legacy;
  EXPECT_NE(legacy.find("{\"Hi\":-0.1,\"Yo\":-2.3025851}"), std::string::npos) << legacy;
  StreamChunk chunk;
  chunk.text = "Hi";
  chunk.logprobs = &lps;
  const std::string streamed = stream_chunk(meta(ApiEndpoint::Completion), chunk).dump();
  EXPECT_NE(streamed.find("\"token_logprobs\":[-0.1]"), std::string::npos) << streamed;
  // Parsed as a double, as clients do, and narrowed: the very float.
  const json parsed = json::parse(legacy);
  EXPECT_EQ(static_cast<float>(parsed["choices"][0]["logprobs"]["token_logprobs"][0].get<double>()), -0.1f);
  EXPECT_EQ(static_cast<float>(parsed["choices"][0]["logprobs"]["top_logprobs"][0]["Yo"].get<double>()),
            -2.3025851f);
}

TEST(OpenAiResponse, ChatChunks) {
  const ResponseMeta m = meta(ApiEndpoint::Chat);
  StreamChunk first;
  first.first = true;
  const json a = stream_chunk(m, first);
  EXPECT_EQ(a["object"], "chat.completion.chunk");
  EXPECT_EQ(a["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(a["choices"][0]["delta"]["content"], "");
  EXPECT_TRUE(a["choices"][0]["finish_reason"].is_null());
  StreamChunk text;
  text.text = "Hi";
  const json b = stream_chunk(m, text);
  EXPECT_FALSE(b["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(b["choices"][0]["delta"]["content"], "Hi");
  EXPECT_EQ(b["id"], a["id"]);
  StreamChunk last;
  last.finish_reason = "length";
  const json c = stream_chunk(m, last);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(c["choices"][0]["delta"].empty());
  const json u = usage_chunk(m, {5, 2, 1, ReuseCounts{1, 0, 0, 4}});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["reuse"]["computed"], 4);
}

TEST(OpenAiResponse, CompletionChunkOffsets) {
  const std::vector<TokenLogprob> lps = {{"a", -1.0f, {}, std::nullopt}, {"bc", -2.0f, {}, std::nullopt}};
  StreamChunk chunk;
  chunk.text = "abc";
  chunk.logprobs = &lps;
  chunk.text_offset = 10;
  const json j = stream_chunk(meta(ApiEndpoint::Completion), chunk);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abc");
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({10, 11}));
}

// Echo with logprobs: the prompt's tokens come first; the first and the
// reused ones have no distribution and show null in both lists.
TEST(OpenAiResponse, LegacyLogprobsWithUnscoredPromptTokens) {
  const std::vector<TokenLogprob> lps = {
      {"", std::nullopt, {}, std::nullopt},                                   // BOS: nothing predicts it
      {" Once", std::nullopt, {}, std::nullopt},                              // predecessor reused
      {" upon", -0.5f, {{" upon", -0.5f}, {" a", -1.25f}}, std::nullopt},     // prompt, scored
      {" a", -0.75f, {}, std::nullopt},                                       // generated, no alternatives
  };
  const json j = completion_response(meta(ApiEndpoint::Completion), " Once upon a", "length",
                                     {3, 1, 1, ReuseCounts{1, 0, 0, 2}}, &lps);
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"", " Once", " upon", " a"}));
  EXPECT_EQ(lp["token_logprobs"], json({nullptr, nullptr, -0.5, -0.75}));
  ASSERT_EQ(lp["top_logprobs"].size(), 4u);
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][1].is_null());
  EXPECT_EQ(lp["top_logprobs"][2], json({{" upon", -0.5}, {" a", -1.25}}));
  EXPECT_EQ(lp["top_logprobs"][3], json::object());
  EXPECT_EQ(lp["text_offset"], json({0, 0, 5, 10}));
  EXPECT_EQ(j["choices"][0]["text"], " Once upon a");
  const json& u = j["usage"];
  const json& r = u["prompt_tokens_details"]["reuse"];
  EXPECT_EQ(r["prefix"].get<int>() + r["shift"].get<int>() + r["recomputed"].get<int>() + r["computed"].get<int>(),
            u["prompt_tokens"].get<int>());
}

// return_tokens_as_token_ids: the names change, the text offsets still count
// the tokens' text.
TEST(OpenAiResponse, TokenIdNamesKeepTextOffsets) {
  const std::vector<TokenLogprob> lps = {
      {"token_id:1", std::nullopt, {}, std::size_t{0}},
      {"token_id:403", -0.5f, {{"token_id:403", -0.5f}, {"token_id:7", -2.0f}}, std::size_t{5}},
      {"token_id:9", -1.0f, {{"token_id:9", -1.0f}}, std::size_t{2}},
  };
  const json j = completion_response(meta(ApiEndpoint::Completion), "", "length", {}, &lps);
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"token_id:1", "token_id:403", "token_id:9"}));
  EXPECT_EQ(lp["top_logprobs"][1], json({{"token_id:403", -0.5}, {"token_id:7", -2.0}}));
  EXPECT_EQ(lp["text_offset"], json({0, 0, 5}));
}

TEST(Sse, EventsAndDone) {
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 from a model never throws; it becomes U+FFFD.
  const std::string bad = sse_event(json{{"t", std::string("\xff")}});
  EXPECT_NE(bad.find("\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace clm
