#include "app/openai_response.h"

#include <random>

#include "util/float_decimal.h"

namespace clm {

namespace {

using nlohmann::json;

// Log-probabilities are floats: written as the float's shortest decimal,
// which a client reads back (as a double, or a float) to the very float.
json logprob_value(float logprob) { return as_shortest_decimal(logprob); }

json token_bytes(const std::string& token) {
  json bytes = json::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

json chat_logprobs(const std::vector<TokenLogprob>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (const auto& [token, lp] : t.top)
      top.push_back({{"token", token}, {"logprob", logprob_value(lp)}, {"bytes", token_bytes(token)}});
    content.push_back({{"token", t.token},
                       {"logprob", t.logprob ? logprob_value(*t.logprob) : json(nullptr)},
                       {"bytes", token_bytes(t.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const std::vector<TokenLogprob>& tokens, std::size_t text_offset) {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const auto& t : tokens) {
    out["tokens"].push_back(t.token);
    if (t.logprob) {
      out["token_logprobs"].push_back(logprob_value(*t.logprob));
      json top = json::object();
      for (const auto& [token, lp] : t.top) top[token] = logprob_value(lp);
      out["top_logprobs"].push_back(top);
    } else {
      out["token_logprobs"].push_back(nullptr);
      out["top_logprobs"].push_back(nullptr);
    }
    out["text_offset"].push_back(text_offset);
    text_offset += t.text_bytes.value_or(t.token.size());
  }
  return out;
}

json logprobs_json(ApiEndpoint endpoint, const std::vector<TokenLogprob>* tokens, std::size_t text_offset) {
  if (!tokens) return nullptr;
  return endpoint == ApiEndpoint::Chat ? chat_logprobs(*tokens) : completion_logprobs(*tokens, text_offset);
}

json base(const ResponseMeta& meta, const char* chat_object, const char* completion_object) {
  return {{"id", meta.id},
          {"object", meta.endpoint == ApiEndpoint::Chat ? chat_object : completion_object},
          {"created", meta.created},
          {"model", meta.model},
          {"system_fingerprint", nullptr}};
}

}  // namespace

std::string make_response_id(ApiEndpoint endpoint) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string id = endpoint == ApiEndpoint::Chat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

json reuse_json(const ReuseCounts& c) {
  return {{"prefix", c.prefix}, {"shift", c.shift}, {"recomputed", c.recomputed}, {"computed", c.computed}};
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"evicted_tokens", u.evicted_tokens},
          {"prompt_tokens_details",
           {{"cached_tokens", u.cached_tokens},
            {"reuse", reuse_json(u.reuse)},
            {"blend_probed", u.blend_probed},
            {"prefill_flops", u.prefill_flops}}}};
}

json finish_details_json(const FinishDetails& d) {
  return {{"type", d.type}, {"cause", d.cause}, {"message", d.message}};
}

json completion_response(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                         const Usage& usage, const std::vector<TokenLogprob>* logprobs, const FinishDetails* details) {
  json out = base(meta, "chat.completion", "text_completion");
  json choice = {{"index", 0}, {"logprobs", logprobs_json(meta.endpoint, logprobs, 0)}, {"finish_reason", finish_reason}};
  if (details) choice["finish_details"] = finish_details_json(*details);
  if (meta.endpoint == ApiEndpoint::Chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(usage);
  return out;
}

json stream_chunk(const ResponseMeta& meta, const StreamChunk& chunk) {
  json out = base(meta, "chat.completion.chunk", "text_completion");
  json choice = {{"index", 0},
                 {"logprobs", logprobs_json(meta.endpoint, chunk.logprobs, chunk.text_offset)},
                 {"finish_reason", chunk.finish_reason ? json(*chunk.finish_reason) : json(nullptr)}};
  if (chunk.finish_details) choice["finish_details"] = finish_details_json(*chunk.finish_details);
  if (meta.endpoint == ApiEndpoint::Chat) {
    json delta = json::object();
    if (chunk.first) delta["role"] = "assistant";
    if (!chunk.text.empty() || (chunk.first && !chunk.finish_reason)) delta["content"] = chunk.text;
    choice["delta"] = delta;
  } else {
    choice["text"] = chunk.text;
  }
  out["choices"] = json::array({choice});
  return out;
}

json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  json out = base(meta, "chat.completion.chunk", "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace clm
