// Renders a chat request's messages into the prompt text the model reads,
// and names the strings that end an assistant turn. The one place the server
// meets chat templates: a plain "Role: text" layout stands in until the
// model layer's template renderer is wired here.
#pragma once

#include <string>
#include <vector>

#include "app/openai_request.h"

namespace clm {

// The messages, then the opening of the assistant's turn.
std::string render_chat_prompt(const std::vector<ChatMessage>& messages);
// Text that, once generated, means the assistant's turn is over.
std::vector<std::string> chat_prompt_stop_strings();

}  // namespace clm
