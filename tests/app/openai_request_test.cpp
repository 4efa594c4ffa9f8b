// OpenAI request parsing: every field's type and range, the error shape and
// status of each refusal, and the defaults a request gets.
#include <gtest/gtest.h>

#include "app/openai_request.h"

namespace clm {
namespace {

using nlohmann::json;

RequestDefaults defaults() {
  RequestDefaults d;
  d.model_id = "stories260K";
  d.max_tokens = 77;
  d.max_tokens_limit = 4096;
  d.sampler.temperature = 0.5f;
  d.sampler.top_k = 12;
  return d;
}

json chat_body() { return {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }

ApiError chat_error(json body) {
  auto r = parse_chat_request(body, defaults());
  EXPECT_FALSE(r.has_value()) << body.dump();
  return r ? ApiError{} : r.error();
}

ApiError completion_error(json body) {
  auto r = parse_completion_request(body, defaults());
  EXPECT_FALSE(r.has_value()) << body.dump();
  return r ? ApiError{} : r.error();
}

TEST(OpenAiRequest, ChatMinimalGetsDefaults) {
  auto r = parse_chat_request(chat_body(), defaults());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->endpoint, ApiEndpoint::Chat);
  EXPECT_EQ(r->model, "stories260K");
  ASSERT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0].role, "user");
  EXPECT_EQ(r->messages[0].content, "hi");
  EXPECT_EQ(r->max_tokens, 77);
  EXPECT_FLOAT_EQ(r->sampler.temperature, 0.5f);
  EXPECT_EQ(r->sampler.top_k, 12);
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->logprobs);
  EXPECT_TRUE(r->stop.empty());
}

TEST(OpenAiRequest, ChatAllFields) {
  json body = chat_body();
  body["model"] = "stories260K";
  body["messages"].push_back({{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}});
  body["max_completion_tokens"] = 9;
  body["temperature"] = 0;
  body["top_p"] = 0.9;
  body["n"] = 1;
  body["stop"] = {"x", "", "yz"};
  body["seed"] = 42;
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  body["presence_penalty"] = 0.5;
  body["frequency_penalty"] = -0.5;
  body["user"] = "u1";
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["session_id"] = "s1";
  body["top_k"] = 5;
  body["min_p"] = 0.1;
  body["repeat_penalty"] = 1.1;
  auto r = parse_chat_request(body, defaults());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->messages[1].content, "ab");
  EXPECT_EQ(r->max_tokens, 9);
  EXPECT_FLOAT_EQ(r->sampler.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r->sampler.top_p, 0.9f);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(r->sampler.seed, 42u);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 3);
  EXPECT_FLOAT_EQ(r->sampler.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r->sampler.frequency_penalty, -0.5f);
  EXPECT_EQ(r->user, "u1");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->session_id, "s1");
  EXPECT_EQ(r->sampler.top_k, 5);
  EXPECT_FLOAT_EQ(r->sampler.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r->sampler.repeat_penalty, 1.1f);
}

TEST(OpenAiRequest, NullMeansAbsent) {
  json body = chat_body();
  body["temperature"] = nullptr;
  body["stop"] = nullptr;
  auto r = parse_chat_request(body, defaults());
  ASSERT_TRUE(r);
  EXPECT_FLOAT_EQ(r->sampler.temperature, 0.5f);
}

TEST(OpenAiRequest, MalformedJsonIs400) {
  for (const char* text : {"{", "", "[1,2]", "\"text\"", "{\"a\":}"}) {
    auto r = parse_json_body(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_EQ(r.error().code, "invalid_json");
  }
  EXPECT_TRUE(parse_json_body("{\"a\": 1}"));
}

TEST(OpenAiRequest, WrongTypesAre400WithParam) {
  struct Case { const char* field; json value; };
  const Case cases[] = {
      {"temperature", "hot"}, {"top_p", true}, {"max_tokens", 1.5}, {"max_tokens", "10"}, {"n", 1.0},
      {"stop", 3}, {"stop", json::array({1})}, {"seed", 0.5}, {"logprobs", 1}, {"stream", "yes"},
      {"user", 7}, {"session_id", json::object()}, {"top_k", -1.5}, {"model", 3}, {"stream_options", 1},
  };
  for (const auto& c : cases) {
    json body = chat_body();
    body["stream"] = true;  // so that stream_options alone is judged by its type
    body[c.field] = c.value;
    const ApiError e = chat_error(body);
    EXPECT_EQ(e.status, 400) << c.field;
    EXPECT_EQ(e.param, c.field) << c.field;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(OpenAiRequest, EvictPositionsIsKeepOrCompact) {
  EXPECT_FALSE(parse_chat_request(chat_body(), defaults())->overrides.evict_positions);
  json body = chat_body();
  body["evict_positions"] = "compact";
  EXPECT_EQ(parse_chat_request(body, defaults())->overrides.evict_positions, EvictPositions::Compact);
  body["evict_positions"] = "keep";
  EXPECT_EQ(
      parse_completion_request(json{{"prompt", "hi"}, {"evict_positions", "keep"}}, defaults())->overrides.evict_positions,
      EvictPositions::Keep);
  for (const json& bad : {json("squeeze"), json(1), json(true)}) {
    body["evict_positions"] = bad;
    const ApiError e = chat_error(body);
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "evict_positions") << bad.dump();
  }
}

TEST(OpenAiRequest, OutOfRangeIs400) {
  struct Case { const char* field; json value; };
  const Case cases[] = {
      {"temperature", -0.1}, {"temperature", 2.5}, {"top_p", 1.5}, {"max_tokens", 0}, {"max_tokens", 5000},
      {"max_completion_tokens", -3}, {"presence_penalty", 3}, {"frequency_penalty", -2.01}, {"top_k", -1},
      {"min_p", 2}, {"repeat_penalty", 0}, {"repeat_penalty", 11}, {"top_logprobs", 21}, {"n", 0},
      {"seed", 18446744073709551615ull},
  };
  for (const auto& c : cases) {
    json body = chat_body();
    body["logprobs"] = true;
    body[c.field] = c.value;
    const ApiError e = chat_error(body);
    EXPECT_EQ(e.status, 400) << c.field << " " << c.value.dump();
    EXPECT_EQ(e.param, c.field);
    EXPECT_EQ(e.code, "out_of_range") << c.field;
  }
}

TEST(OpenAiRequest, MessagesValidated) {
  EXPECT_EQ(chat_error(json::object()).code, "missing_field");
  EXPECT_EQ(chat_error({{"messages", json::array()}}).param, "messages");
  EXPECT_EQ(chat_error({{"messages", "hi"}}).param, "messages");
  EXPECT_EQ(chat_error({{"messages", {1}}}).param, "messages[0]");
  EXPECT_EQ(chat_error({{"messages", {{{"content", "x"}}}}}).param, "messages[0].role");
  EXPECT_EQ(chat_error({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}).param, "messages[0].role");
  EXPECT_EQ(chat_error({{"messages", {{{"role", "user"}, {"content", 5}}}}}).param, "messages[0].content");
  EXPECT_EQ(chat_error({{"messages", {{{"role", "tool"}, {"content", "x"}}}}}).status, 422);
  auto dev = parse_chat_request({{"messages", {{{"role", "developer"}, {"content", "be brief"}}}}}, defaults());
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->messages[0].role, "system");
  const ApiError image = chat_error(
      {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}});
  EXPECT_EQ(image.status, 422);
  EXPECT_EQ(image.param, "messages[0].content");
}

TEST(OpenAiRequest, UnknownModelIs404) {
  json body = chat_body();
  body["model"] = "gpt-9";
  const ApiError e = chat_error(body);
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_EQ(e.param, "model");
}

TEST(OpenAiRequest, MoreThanOneChoiceIsRefusedClearly) {
  json body = chat_body();
  body["n"] = 2;
  const ApiError e = chat_error(body);
  EXPECT_EQ(e.status, 422);
  EXPECT_EQ(e.param, "n");
  EXPECT_NE(e.message.find("'n' must be 1"), std::string::npos);
}

TEST(OpenAiRequest, StreamOptionsNeedStream) {
  json body = chat_body();
  body["stream_options"] = {{"include_usage", true}};
  EXPECT_EQ(chat_error(body).param, "stream_options");
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", "yes"}};
  EXPECT_EQ(chat_error(body).param, "stream_options.include_usage");
}

TEST(OpenAiRequest, TopLogprobsNeedsLogprobs) {
  json body = chat_body();
  body["top_logprobs"] = 2;
  EXPECT_EQ(chat_error(body).param, "top_logprobs");
}

TEST(OpenAiRequest, TooManyStopStrings) {
  json body = chat_body();
  body["stop"] = std::vector<std::string>(kMaxStopStrings + 1, "x");
  EXPECT_EQ(chat_error(body).param, "stop");
}

TEST(OpenAiRequest, SeedMinusOneMeansRandom) {
  json body = chat_body();
  body["seed"] = -1;
  auto r = parse_chat_request(body, defaults());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sampler.seed, kRandomSeed);
}

TEST(OpenAiRequest, CompletionPromptForms) {
  auto a = parse_completion_request({{"prompt", "Once"}}, defaults());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->endpoint, ApiEndpoint::Completion);
  EXPECT_EQ(a->prompt, "Once");
  auto b = parse_completion_request({{"prompt", {"Upon"}}, {"stop", "."}}, defaults());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->prompt, "Upon");
  EXPECT_EQ(b->stop, std::vector<std::string>{"."});
  EXPECT_EQ(completion_error(json::object()).code, "missing_field");
  EXPECT_EQ(completion_error({{"prompt", 5}}).status, 400);
  EXPECT_EQ(completion_error({{"prompt", json::array()}}).status, 400);
  EXPECT_EQ(completion_error({{"prompt", {"a", "b"}}}).status, 422);
  EXPECT_TRUE(a->prompt_ids.empty());
}

TEST(OpenAiRequest, CompletionPromptAsTokenIds) {
  RequestDefaults d = defaults();
  d.n_vocab = 512;
  auto flat = parse_completion_request({{"prompt", {1, 400, 0, 511}}}, d);
  ASSERT_TRUE(flat) << flat.error().message;
  EXPECT_EQ(flat->prompt_ids, (std::vector<int32_t>{1, 400, 0, 511}));
  EXPECT_EQ(flat->prompt, "");
  auto nested = parse_completion_request({{"prompt", json::array({json::array({7, 8})})}}, d);
  ASSERT_TRUE(nested) << nested.error().message;
  EXPECT_EQ(nested->prompt_ids, (std::vector<int32_t>{7, 8}));

  auto error = [&](json prompt) {
    auto r = parse_completion_request({{"prompt", prompt}}, d);
    EXPECT_FALSE(r.has_value()) << prompt.dump();
    return r ? ApiError{} : r.error();
  };
  // Outside the vocabulary, negative, or too large for any integer type.
  for (json bad : {json{1, 512}, json{-1}, json{1, 18446744073709551615ull}, json::array({json{3, 600}})}) {
    const ApiError e = error(bad);
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "prompt");
    EXPECT_EQ(e.code, "out_of_range") << bad.dump();
    EXPECT_NE(e.message.find("not a token id"), std::string::npos) << e.message;
  }
  EXPECT_NE(error({1, 512}).message.find("'prompt[1]' is 512"), std::string::npos);
  EXPECT_NE(error(json::array({json{3, 600}})).message.find("'prompt[0][1]' is 600"), std::string::npos);
  // Not integers, or mixed with text.
  for (json bad : {json{1, 2.5}, json{1, "a"}, json{1, true}, json{1, json{2}}, json::array({json{"a"}})}) {
    const ApiError e = error(bad);
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "prompt");
    EXPECT_EQ(e.code, "invalid_type") << bad.dump();
  }
  EXPECT_EQ(error({"a", 1}).code, "invalid_type");
  EXPECT_EQ(error(json::array({json{1}, 2})).code, "invalid_type");
  // Empty: no ids at all.
  EXPECT_EQ(error(json::array()).status, 400);
  EXPECT_EQ(error(json::array({json::array()})).status, 400);
  // Several prompts are valid OpenAI, not implemented here.
  EXPECT_EQ(error(json::array({json{1}, json{2}})).status, 422);
  // Without a known vocabulary only the sign and size are checked here; the
  // server checks the rest against its model.
  auto unknown = parse_completion_request({{"prompt", {1, 100000}}}, defaults());
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->prompt_ids, (std::vector<int32_t>{1, 100000}));
}

TEST(OpenAiRequest, ReuseModeOnBothEndpoints) {
  for (const auto& [text, mode] : {std::pair{"off", ReuseMode::Off}, std::pair{"prefix", ReuseMode::Prefix},
                                   std::pair{"shift", ReuseMode::Shift}, std::pair{"blend", ReuseMode::Blend}}) {
    json chat = chat_body();
    chat["reuse"] = text;
    auto c = parse_chat_request(chat, defaults());
    ASSERT_TRUE(c) << text;
    EXPECT_EQ(c->overrides.reuse, mode);
    auto p = parse_completion_request({{"prompt", "x"}, {"reuse", text}}, defaults());
    ASSERT_TRUE(p) << text;
    EXPECT_EQ(p->overrides.reuse, mode);
  }
  EXPECT_FALSE(parse_chat_request(chat_body(), defaults())->overrides.reuse.has_value());
  json null_reuse = chat_body();
  null_reuse["reuse"] = nullptr;
  EXPECT_FALSE(parse_chat_request(null_reuse, defaults())->overrides.reuse.has_value());
  for (json bad : {json("mix"), json("Prefix"), json(""), json(1), json(true), json::array({"prefix"})}) {
    json body = chat_body();
    body["reuse"] = bad;
    const ApiError e = chat_error(body);
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "reuse");
    EXPECT_NE(e.message.find("'reuse'"), std::string::npos) << e.message;
    EXPECT_EQ(completion_error({{"prompt", "x"}, {"reuse", bad}}).param, "reuse");
  }
  EXPECT_EQ(chat_error({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"reuse", "mix"}}).code,
            "invalid_value");
  EXPECT_EQ(chat_error({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"reuse", 3}}).code, "invalid_type");
}

TEST(OpenAiRequest, BlendRatioIsAShareOrAuto) {
  json body = chat_body();
  EXPECT_FALSE(parse_chat_request(body, defaults())->overrides.blend.has_value());
  body["blend_ratio"] = 0.3;
  auto r = parse_chat_request(body, defaults());
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->overrides.blend.has_value());
  EXPECT_FLOAT_EQ(r->overrides.blend->ratio, 0.3f);
  EXPECT_FALSE(r->overrides.blend->adaptive);
  auto a = parse_completion_request({{"prompt", "x"}, {"blend_ratio", "auto"}}, defaults());
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->overrides.blend.has_value());
  EXPECT_TRUE(a->overrides.blend->adaptive);
  for (json bad : {json(1.5), json(-0.1), json("half"), json(true), json::array({0.2})}) {
    const ApiError e = completion_error({{"prompt", "x"}, {"blend_ratio", bad}});
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "blend_ratio") << bad.dump();
  }
}

TEST(OpenAiRequest, BlockStrategyOnBothEndpoints) {
  EXPECT_FALSE(parse_chat_request(chat_body(), defaults())->overrides.block_strategy.has_value());
  for (const auto& [text, strategy] :
       {std::pair{"token", BlockStrategy::Token}, std::pair{"semantic", BlockStrategy::Semantic},
        std::pair{"session", BlockStrategy::Session}}) {
    json chat = chat_body();
    chat["block_strategy"] = text;
    auto c = parse_chat_request(chat, defaults());
    ASSERT_TRUE(c) << text;
    EXPECT_EQ(c->overrides.block_strategy, strategy);
    auto p = parse_completion_request({{"prompt", "x"}, {"block_strategy", text}}, defaults());
    ASSERT_TRUE(p) << text;
    EXPECT_EQ(p->overrides.block_strategy, strategy);
  }
  for (json bad : {json("sentence"), json("Token"), json(""), json(2), json(false), json::array({"token"})}) {
    json body = chat_body();
    body["block_strategy"] = bad;
    const ApiError e = chat_error(body);
    EXPECT_EQ(e.status, 400) << bad.dump();
    EXPECT_EQ(e.param, "block_strategy");
    EXPECT_NE(e.message.find("'block_strategy'"), std::string::npos) << e.message;
    EXPECT_EQ(completion_error({{"prompt", "x"}, {"block_strategy", bad}}).status, 400);
  }
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"block_strategy", "words"}}).code, "invalid_value");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"block_strategy", 1}}).code, "invalid_type");
}

TEST(OpenAiRequest, EchoLogprobsAndTokenIdNames) {
  auto score = parse_completion_request(
      {{"prompt", {1, 2, 3}}, {"echo", true}, {"logprobs", 5}, {"max_tokens", 0}, {"return_tokens_as_token_ids", true}},
      defaults());
  ASSERT_TRUE(score) << score.error().message;
  EXPECT_TRUE(score->echo);
  EXPECT_TRUE(score->logprobs);
  EXPECT_EQ(score->top_logprobs, 5);
  EXPECT_EQ(score->max_tokens, 0);
  EXPECT_TRUE(score->return_tokens_as_token_ids);
  auto plain = parse_completion_request({{"prompt", "x"}}, defaults());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->echo);
  EXPECT_FALSE(plain->return_tokens_as_token_ids);
  // Echo without logprobs just repeats the prompt's text.
  auto echo_only = parse_completion_request({{"prompt", "x"}, {"echo", true}}, defaults());
  ASSERT_TRUE(echo_only);
  EXPECT_TRUE(echo_only->echo);
  EXPECT_FALSE(echo_only->logprobs);
  // Token-id names also apply to chat logprobs.
  json chat = chat_body();
  chat["logprobs"] = true;
  chat["return_tokens_as_token_ids"] = true;
  auto c = parse_chat_request(chat, defaults());
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->return_tokens_as_token_ids);

  EXPECT_EQ(completion_error({{"prompt", "x"}, {"echo", 1}}).param, "echo");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"echo", "yes"}}).code, "invalid_type");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"return_tokens_as_token_ids", 1}}).param,
            "return_tokens_as_token_ids");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"echo", true}, {"logprobs", 21}}).code, "out_of_range");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"echo", true}, {"logprobs", -1}}).code, "out_of_range");
  // The prompt's logprobs exist only at the end, so echo is not streamed.
  const ApiError streamed = completion_error({{"prompt", "x"}, {"echo", true}, {"stream", true}});
  EXPECT_EQ(streamed.status, 422);
  EXPECT_EQ(streamed.param, "echo");
  EXPECT_TRUE(parse_completion_request({{"prompt", "x"}, {"echo", false}, {"stream", true}}, defaults()));
}

TEST(OpenAiRequest, LogprobStartLenIsANonNegativeIndex) {
  auto scored = parse_completion_request(
      {{"prompt", {1, 2, 3}}, {"echo", true}, {"logprobs", 0}, {"logprob_start_len", 2}}, defaults());
  ASSERT_TRUE(scored) << scored.error().message;
  EXPECT_EQ(scored->logprob_start_len, 2);
  auto zero = parse_completion_request({{"prompt", "x"}, {"logprob_start_len", 0}}, defaults());
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->logprob_start_len, 0);
  auto absent = parse_completion_request({{"prompt", "x"}, {"logprob_start_len", nullptr}}, defaults());
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->logprob_start_len);
  const ApiError negative = completion_error({{"prompt", "x"}, {"logprob_start_len", -1}});
  EXPECT_EQ(negative.status, 400);
  EXPECT_EQ(negative.param, "logprob_start_len");
  EXPECT_EQ(negative.code, "out_of_range");
  for (const json& bad : {json(1.5), json("3"), json(true), json::array({1})}) {
    const ApiError e = completion_error({{"prompt", "x"}, {"logprob_start_len", bad}});
    EXPECT_EQ(e.param, "logprob_start_len") << bad.dump();
    EXPECT_EQ(e.code, "invalid_type") << bad.dump();
  }
}

TEST(OpenAiRequest, ZeroMaxTokensOnlyForCompletions) {
  auto zero = parse_completion_request({{"prompt", "x"}, {"max_tokens", 0}}, defaults());
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->max_tokens, 0);
  auto zero_new = parse_completion_request({{"prompt", "x"}, {"max_completion_tokens", 0}}, defaults());
  ASSERT_TRUE(zero_new);
  EXPECT_EQ(zero_new->max_tokens, 0);
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"max_tokens", -1}}).code, "out_of_range");
  json chat = chat_body();
  chat["max_tokens"] = 0;
  EXPECT_EQ(chat_error(chat).code, "out_of_range");
}

TEST(OpenAiRequest, IgnoreEosIsAFlagThatDefaultsOff) {
  auto plain = parse_completion_request({{"prompt", "x"}}, defaults());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->ignore_eos);
  auto ignoring = parse_completion_request({{"prompt", "x"}, {"ignore_eos", true}}, defaults());
  ASSERT_TRUE(ignoring);
  EXPECT_TRUE(ignoring->ignore_eos);
  json chat = chat_body();
  chat["ignore_eos"] = true;
  auto c = parse_chat_request(chat, defaults());
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ignore_eos);
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"ignore_eos", 1}}).param, "ignore_eos");
}

TEST(OpenAiRequest, CompletionLogprobsIsACount) {
  auto r = parse_completion_request({{"prompt", "x"}, {"logprobs", 3}}, defaults());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 3);
  auto none = parse_completion_request({{"prompt", "x"}}, defaults());
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->logprobs);
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"logprobs", true}}).param, "logprobs");
  EXPECT_EQ(completion_error({{"prompt", "x"}, {"logprobs", 99}}).code, "out_of_range");
}

TEST(OpenAiRequest, ErrorJsonShape) {
  const ApiError e = invalid_field_error("temperature", "bad");
  const json j = e.to_json();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  const json none = unauthorized_error().to_json();
  EXPECT_TRUE(none["error"]["param"].is_null());
  EXPECT_EQ(unauthorized_error().status, 401);
  EXPECT_EQ(body_too_large_error(10).status, 413);
  const ApiError busy = server_busy_error(2);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.retry_after_s, 2);
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

TEST(OpenAiRequest, CompletionParseSpecialIsAFlagThatDefaultsOn) {
  auto on = parse_completion_request({{"prompt", "a</s>"}}, defaults());
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->parse_special);
  auto off = parse_completion_request({{"prompt", "a</s>"}, {"parse_special", false}}, defaults());
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->parse_special);
  const ApiError e = completion_error({{"prompt", "a"}, {"parse_special", 1}});
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "parse_special");
}

}  // namespace
}  // namespace clm
