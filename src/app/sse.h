// Server-sent events as OpenAI streams them: each JSON object is one
// "data: {...}\n\n" event and the stream ends with "data: [DONE]\n\n".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace clm {

// Invalid UTF-8 in a string is replaced with U+FFFD rather than throwing.
std::string to_json_text(const nlohmann::json& value);
std::string sse_event(const nlohmann::json& data);
inline std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace clm
