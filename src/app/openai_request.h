// OpenAI request parsing: turns the JSON body of POST /v1/chat/completions or
// /v1/completions into a plain GenerationRequest, checking every field's type
// and range. Nothing here touches a model; a request that parses is one the
// server can run. Unknown fields are ignored, as OpenAI's own API does.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/api_error.h"
#include "engine/request_overrides.h"
#include "model/chat_template.h"
#include "model/sampler.h"

namespace clm {

enum class ApiEndpoint { Chat, Completion };

struct GenerationRequest {
  ApiEndpoint endpoint = ApiEndpoint::Completion;
  std::string model;
  std::vector<ChatMessage> messages;  // chat; roles system, user, assistant
  std::string prompt;                 // completion, given as text
  // Completion, given as token ids: used as they are (no BOS added).
  // Non-empty exactly when the prompt came as ids.
  std::vector<int32_t> prompt_ids;
  // Completion, text prompt (extension "parse_special"): special-token text
  // in it becomes the token (the default), or stays text. Chat message
  // contents always stay text; control tokens come from the template alone.
  bool parse_special = true;
  // Completion: the choice's text, and its logprobs when asked for, start
  // with the prompt's. With logprobs, the prompt's are scored too.
  bool echo = false;
  // Completion, extension (SGLang's name): with echo and logprobs, every
  // prompt position from this index on is scored, whatever the cache holds.
  std::optional<int> logprob_start_len;
  int max_tokens = 0;                 // filled from the defaults when absent; completions allow 0
  SamplerParams sampler;              // the defaults, overridden field by field
  std::vector<std::string> stop;
  int top_logprobs = 0;               // 0: none
  bool logprobs = false;
  std::string user;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  std::string session_id;             // extension: keep this conversation's prefix resident
  // vLLM's name: requests with different salts share no cached K/V. The
  // namespace it makes (with the API key's, if any) is set by the server.
  std::string cache_salt;
  uint64_t cache_namespace = 0;
  // Extensions overriding the server's flags for this request: "reuse"
  // (--reuse), "blend_ratio" (--blend-ratio), "block_strategy"
  // (--block-strategy), "kv_budget_tokens" (--kv-budget-tokens, 0: none)
  // and "evict_positions" (--evict-positions). Handed to the engine as they are.
  RequestOverrides overrides;
  bool return_tokens_as_token_ids = false;  // logprobs name tokens "token_id:N", not by text
  // Extension (llama.cpp's name): generate past end-of-generation tokens, so
  // that a benchmark gets exactly max_tokens from every request.
  bool ignore_eos = false;
};

// What a request gets for the fields it leaves out, and the limits it must keep.
struct RequestDefaults {
  std::string model_id;               // the one model served; "model" must name it when given
  int max_tokens = 256;
  int max_tokens_limit = 1 << 20;
  SamplerParams sampler;
  int n_vocab = 0;                    // > 0: token ids of a prompt must be below it
};

inline constexpr std::size_t kMaxStopStrings = 16;
inline constexpr int kMaxTopLogprobs = 20;

// Parses the raw body first; malformed JSON or a non-object is a 400.
std::expected<nlohmann::json, ApiError> parse_json_body(std::string_view body);

std::expected<GenerationRequest, ApiError> parse_chat_request(const nlohmann::json& body,
                                                              const RequestDefaults& defaults);
std::expected<GenerationRequest, ApiError> parse_completion_request(const nlohmann::json& body,
                                                                    const RequestDefaults& defaults);

}  // namespace clm
