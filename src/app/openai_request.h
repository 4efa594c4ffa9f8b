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
#include "model/chat_template.h"
#include "model/sampler.h"

namespace clm {

enum class ApiEndpoint { Chat, Completion };

struct GenerationRequest {
  ApiEndpoint endpoint = ApiEndpoint::Completion;
  std::string model;
  std::vector<ChatMessage> messages;  // chat; roles system, user, assistant
  std::string prompt;                 // completion
  int max_tokens = 0;                 // filled from the defaults when absent
  SamplerParams sampler;              // the defaults, overridden field by field
  std::vector<std::string> stop;
  int top_logprobs = 0;               // 0: none
  bool logprobs = false;
  std::string user;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  std::string session_id;             // extension: keep this conversation's prefix resident
};

// What a request gets for the fields it leaves out, and the limits it must keep.
struct RequestDefaults {
  std::string model_id;               // the one model served; "model" must name it when given
  int max_tokens = 256;
  int max_tokens_limit = 1 << 20;
  SamplerParams sampler;
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
