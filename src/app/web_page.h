// The chat page served at "/": one self-contained HTML document (no external
// assets) that keeps the conversation in the browser and streams each reply
// from POST /v1/chat/completions.
#pragma once

#include <string_view>

namespace clm {

std::string_view chat_web_page();

}  // namespace clm
