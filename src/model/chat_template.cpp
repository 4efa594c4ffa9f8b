#include "model/chat_template.h"

#include <array>
#include <utility>

namespace clm {
namespace {

struct FormatName {
  ChatFormat format;
  std::string_view name;
};

constexpr std::array<FormatName, 5> kFormatNames = {{
    {ChatFormat::Llama2, "llama2"},
    {ChatFormat::Llama3, "llama3"},
    {ChatFormat::ChatML, "chatml"},
    {ChatFormat::Zephyr, "zephyr"},
    {ChatFormat::Plain, "plain"},
}};

struct Marker {
  std::string_view text;
  ChatFormat format;
};

// Order matters: a Llama3 or ChatML template may mention "[INST]" or
// "<|user|>" in passing (e.g. in a comment or a fallback branch), never the
// other way round.
constexpr std::array<Marker, 4> kTemplateMarkers = {{
    {"<|start_header_id|>", ChatFormat::Llama3},
    {"<|im_start|>", ChatFormat::ChatML},
    {"[INST]", ChatFormat::Llama2},
    {"<|user|>", ChatFormat::Zephyr},
}};

// Zephyr's role tags are plain text, not vocabulary entries, so a vocabulary
// with a "<|user|>" token belongs to some other family; it is not a marker.
constexpr std::array<Marker, 3> kVocabMarkers = {{
    {"<|start_header_id|>", ChatFormat::Llama3},
    {"<|im_start|>", ChatFormat::ChatML},
    {"[INST]", ChatFormat::Llama2},
}};

// Jinja's trim: leading and trailing whitespace.
std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

bool starts_with_space(std::string_view s) {
  return !s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r');
}

void render_llama2(std::string& out, std::span<const ChatMessage> messages) {
  // A system message waits for the next user turn, inside whose [INST] it is
  // written. The first BOS comes from the tokenizer; later turns open with
  // "<s>" as text because each exchange is its own BOS..EOS sequence.
  std::string_view system;
  bool has_system = false;
  bool after_reply = false;
  auto open_turn = [&] {
    if (after_reply) out += "<s>";
    after_reply = false;
    out += "[INST] ";
    if (has_system) {
      out += "<<SYS>>\n";
      out += trim(system);
      out += "\n<</SYS>>\n\n";
      has_system = false;
    }
  };
  for (const auto& m : messages) {
    if (m.role == "system") {
      system = m.content;
      has_system = true;
    } else if (m.role == "assistant") {
      out += ' ';
      out += trim(m.content);
      out += " </s>";
      after_reply = true;
    } else {
      open_turn();
      out += trim(m.content);
      out += " [/INST]";
    }
  }
  // A system message with no user turn after it still reaches the model.
  if (has_system) {
    open_turn();
    out += " [/INST]";
  }
}

void render_llama3(std::string& out, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  for (const auto& m : messages) {
    out += "<|start_header_id|>";
    out += m.role;
    out += "<|end_header_id|>\n\n";
    out += trim(m.content);
    out += "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

void render_chatml(std::string& out, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  for (const auto& m : messages) {
    out += "<|im_start|>";
    out += m.role;
    out += '\n';
    out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
}

void render_zephyr(std::string& out, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  for (const auto& m : messages) {
    out += "<|";
    out += m.role;
    out += "|>\n";
    out += m.content;
    out += "</s>\n";
  }
  if (add_generation_prompt) out += "<|assistant|>\n";
}

void render_plain(std::string& out, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  for (const auto& m : messages) {
    if (m.role == "system") {
      out += m.content;
    } else if (m.role == "assistant") {
      // A reply generated after "Assistant:" already starts with its space.
      out += "Assistant:";
      if (!m.content.empty() && !starts_with_space(m.content)) out += ' ';
      out += m.content;
    } else {
      out += "User: ";
      out += m.content;
    }
    out += '\n';
  }
  if (add_generation_prompt) out += "Assistant:";
}

}  // namespace

ChatFormat detect_chat_format(const GgufFile& file, const Tokenizer& tokenizer) {
  if (auto tmpl = file.get_string("tokenizer.chat_template")) {
    for (const auto& marker : kTemplateMarkers) {
      if (tmpl->find(marker.text) != std::string_view::npos) return marker.format;
    }
  }
  for (const auto& marker : kVocabMarkers) {
    if (tokenizer.find_token(marker.text)) return marker.format;
  }
  return ChatFormat::Plain;
}

Result<ChatFormat> parse_chat_format(std::string_view name) {
  std::string valid;
  for (const auto& f : kFormatNames) {
    if (f.name == name) return f.format;
    if (!valid.empty()) valid += ", ";
    valid += f.name;
  }
  return fail("unknown chat format '" + std::string(name) + "' (valid: " + valid + ")");
}

std::string_view chat_format_name(ChatFormat format) {
  for (const auto& f : kFormatNames) {
    if (f.format == format) return f.name;
  }
  return "unknown";
}

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out;
  switch (format) {
    case ChatFormat::Llama2: render_llama2(out, messages); break;
    case ChatFormat::Llama3: render_llama3(out, messages, add_generation_prompt); break;
    case ChatFormat::ChatML: render_chatml(out, messages, add_generation_prompt); break;
    case ChatFormat::Zephyr: render_zephyr(out, messages, add_generation_prompt); break;
    case ChatFormat::Plain: render_plain(out, messages, add_generation_prompt); break;
  }
  return out;
}

std::string chat_end_of_turn(ChatFormat format) {
  switch (format) {
    case ChatFormat::Llama2: return " </s>";
    case ChatFormat::Llama3: return "<|eot_id|>";
    case ChatFormat::ChatML: return "<|im_end|>\n";
    case ChatFormat::Zephyr: return "</s>\n";
    case ChatFormat::Plain: return "\n";
  }
  return {};
}

std::vector<std::string> chat_stop_strings(ChatFormat format) {
  switch (format) {
    case ChatFormat::Llama2: return {"</s>", "[INST]"};
    case ChatFormat::Llama3: return {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|start_header_id|>"};
    case ChatFormat::ChatML: return {"<|im_end|>", "<|im_start|>", "<|endoftext|>"};
    case ChatFormat::Zephyr: return {"</s>", "<|user|>", "<|system|>", "<|assistant|>"};
    case ChatFormat::Plain: return {"\nUser:"};
  }
  return {};
}

}  // namespace clm
