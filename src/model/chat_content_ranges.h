// Where the message contents lie in a rendered chat prompt, so that they can
// be tokenized as text while the template's markup keeps its control tokens.
// A template is opaque (Jinja), so the contents are found by rendering twice:
// once as given and once with each content wrapped in two sentinels (Unicode
// noncharacters, which no real text holds). The sentinels mark the ranges:
// the markup between them must reappear exactly in the first rendering, with
// each content in between as given or trimmed of whitespace at either or
// both ends (Llama 2 and 3 trim contents; a format may drop a space).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/chat_template.h"
#include "model/prompt_text.h"

namespace clm {

// The messages with each non-empty content between the sentinels, or
// nullopt when a content already holds a sentinel (then it cannot be
// located this way).
std::optional<std::vector<ChatMessage>> wrap_contents(std::span<const ChatMessage> messages);

// The prompt `rendered` with its contents as literal ranges, found from
// `rendered_wrapped` (the rendering of wrap_contents). nullopt when the two
// do not correspond (the template did more to a content than trim it).
std::optional<PromptText> locate_contents(const std::string& rendered, const std::string& rendered_wrapped);

}  // namespace clm
