// OpenAI response bodies: chat.completion and text_completion objects, their
// streaming chunks, usage with cached prompt tokens and where each prompt
// token's K/V came from, and log-probabilities in each endpoint's own layout
// (null where none was computed). Pure formatting of values already computed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/openai_request.h"
#include "cache/reuse_plan.h"

namespace clm {

struct TokenLogprob {
  std::string token;  // the token's text, or "token_id:N"
  // None where no distribution was computed: the first prompt token, and a
  // prompt token whose predecessor's K/V was reused. `top` is then null too.
  std::optional<float> logprob;
  std::vector<std::pair<std::string, float>> top;  // most likely first
  // The bytes of the token's text where `token` shows something else, so
  // that text offsets still count text.
  std::optional<std::size_t> text_bytes;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens reused from the KV cache, not computed (reuse.prefix + reuse.shift)
  ReuseCounts reuse;      // where each prompt token's K/V came from; sums to prompt_tokens
  int blend_probed = 0;        // prompt tokens blend's first pass probed
  double prefill_flops = 0.0;  // arithmetic the prompt cost, probes included
  int evicted_tokens = 0;      // K/V slots forgotten within the KV budget (--kv-budget-tokens)
};

// What every object of one response shares.
struct ResponseMeta {
  ApiEndpoint endpoint = ApiEndpoint::Completion;
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// Why a choice ended early, beside its finish_reason (an extension field of
// the choice, "finish_details", present only then): a preempted generation
// says "length" like one that hit max_tokens, and this tells them apart.
struct FinishDetails {
  std::string type;     // "preempted"
  std::string cause;    // "kv_cache_full"
  std::string message;  // for people
};
nlohmann::json finish_details_json(const FinishDetails& details);

// A fresh id with the endpoint's prefix and 24 random hex digits.
std::string make_response_id(ApiEndpoint endpoint);

// {"prefix", "shift", "recomputed", "computed"}: the usage's breakdown, also
// printed by `run --json`.
nlohmann::json reuse_json(const ReuseCounts& counts);
nlohmann::json usage_json(const Usage& usage);

// The whole non-streaming response. logprobs: nullptr when not requested;
// details: nullptr unless the generation ended early.
nlohmann::json completion_response(const ResponseMeta& meta, const std::string& text,
                                   const std::string& finish_reason, const Usage& usage,
                                   const std::vector<TokenLogprob>* logprobs,
                                   const FinishDetails* details = nullptr);

struct StreamChunk {
  std::string text;
  bool first = false;  // chat: the first chunk announces the assistant role
  std::optional<std::string> finish_reason;
  std::optional<FinishDetails> finish_details;  // with finish_reason, when the generation ended early
  const std::vector<TokenLogprob>* logprobs = nullptr;  // the tokens this chunk covers
  std::size_t text_offset = 0;  // completions: where this chunk's text starts in the reply
};
nlohmann::json stream_chunk(const ResponseMeta& meta, const StreamChunk& chunk);
// The final chunk of stream_options.include_usage: no choices, only usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);

}  // namespace clm
