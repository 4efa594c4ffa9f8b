// How a model's conversations become prompt text: the model's own Jinja chat
// template (tokenizer.chat_template, or a template file), or one of the
// hand-written formats of chat_template.h. Chosen once per model, then
// shared by every request (rendering is const and thread-safe).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat_template.h"
#include "model/gguf.h"
#include "model/jinja/template.h"
#include "model/prompt_text.h"
#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

class ChatRenderer {
 public:
  static ChatRenderer builtin(ChatFormat format);
  // Parses `source` (fails with the line and column of a syntax error). The
  // template sees messages [{role, content}], add_generation_prompt, and
  // bos_token / eos_token as the tokenizer's BOS and EOS text.
  static Result<ChatRenderer> jinja(std::string_view source, const Tokenizer& tokenizer);

  // The prompt text, to be encoded with add_special = true and
  // parse_special = true, as for the hand-written formats: special-token
  // text becomes the token, and BOS is never doubled. A template that writes
  // bos_token first (Llama 3, Mistral, Gemma) has that text removed when the
  // tokenizer adds BOS itself, as does llama.cpp; likewise a final eos_token
  // when the tokenizer adds EOS. Fails when the template raises an error
  // (raise_exception: e.g. roles that do not alternate, a system message
  // Gemma does not take) or breaks a rendering limit.
  Result<std::string> render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  // The prompt to tokenize (Tokenizer::encode(PromptText, true)): render's
  // text, with every message content marked literal, so that special-token
  // text a message holds ("</s>", "<|eot_id|>") stays text and control
  // tokens come from the template's markup alone. When a template changes
  // contents beyond trimming them, so that they cannot be located, the
  // prompt is refused if a content holds a control token's text (otherwise
  // marking changes nothing).
  Result<PromptText> render_prompt(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  // "jinja" or the hand-written format's name.
  std::string_view name() const;
  bool is_jinja() const { return jinja_ != nullptr; }
  // Text that ends the assistant's turn when it appears in the generated
  // text. For a template: the special token that follows an assistant
  // message ("<|eot_id|>", "<|im_end|>", "<end_of_turn>", "</s>", ...).
  const std::vector<std::string>& stop_strings() const { return stop_strings_; }
  // What the next rendering writes right after an assistant message,
  // before the following turn (empty when a template's probe failed).
  const std::string& end_of_turn() const { return end_of_turn_; }

 private:
  struct Jinja;
  ChatRenderer() = default;

  ChatFormat format_ = ChatFormat::Plain;
  // Texts of the vocabulary's control tokens (for a template only; see
  // render_prompt).
  std::shared_ptr<const std::vector<std::string>> control_texts_;
  std::shared_ptr<const Jinja> jinja_;
  std::vector<std::string> stop_strings_;
  std::string end_of_turn_;
};

// What the user asked for, parsed at the edge.
struct ChatRendererChoice {
  std::string format = "auto";  // auto, jinja, or a hand-written format's name
  std::optional<std::string> template_source;  // a template given by the user
};

// auto: a given template, else the file's tokenizer.chat_template, else the
// format detect_chat_format picks. A template that does not parse, or fails
// on a one-message conversation, is passed over for the detected format
// with a warning (in *warning). jinja: the given or the file's template,
// which must parse. A format name: that format (a given template is then
// an error).
Result<ChatRenderer> choose_chat_renderer(const GgufFile& file, const Tokenizer& tokenizer,
                                          const ChatRendererChoice& choice, std::string* warning);

}  // namespace clm
