#include "app/chat_prompt.h"

namespace clm {

namespace {

std::string role_label(const std::string& role) {
  if (role == "system" || role == "developer") return "System";
  if (role == "assistant") return "Assistant";
  if (role == "tool") return "Tool";
  return "User";
}

}  // namespace

std::string render_chat_prompt(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) out += role_label(m.role) + ": " + m.content + "\n";
  out += "Assistant:";
  return out;
}

std::vector<std::string> chat_prompt_stop_strings() { return {"\nUser:", "\nSystem:"}; }

}  // namespace clm
