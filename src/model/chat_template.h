// Hand-written chat formats: turns a conversation into the prompt text a chat
// model was trained on, for a fixed set of well-known formats picked from GGUF
// metadata. A model's own Jinja template comes first (chat_renderer.h); these
// serve models without one and stay selectable by name. Rendering is
// append-only across turns, so multi-turn chat hits the prefix cache.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

enum class ChatFormat { Llama2, Llama3, ChatML, Zephyr, Plain };

// The format a model expects. tokenizer.chat_template (a Jinja string) is
// recognised by distinctive markers ("<|start_header_id|>" -> Llama3,
// "<|im_start|>" -> ChatML, "[INST]" -> Llama2, "<|user|>" -> Zephyr, checked
// in that order); failing that, special tokens of the vocabulary decide
// (a token "<|start_header_id|>" -> Llama3, "<|im_start|>" -> ChatML,
// "[INST]" -> Llama2); failing that, Plain.
ChatFormat detect_chat_format(const GgufFile& file, const Tokenizer& tokenizer);

// "llama2", "llama3", "chatml", "zephyr", "plain"; the error lists them.
Result<ChatFormat> parse_chat_format(std::string_view name);
std::string_view chat_format_name(ChatFormat format);

// The prompt text for `messages`. Special tokens appear as their text, so
// encode it with parse_special = true. BOS is never part of the text: encode
// with add_special = true and the tokenizer adds it where the model wants it
// (one BOS, never two). Later BOS/EOS inside the history (Llama2's
// "</s><s>", Zephyr's "</s>") are written as text.
// add_generation_prompt appends the assistant header so the model answers
// next (Llama2 needs none: a user turn already ends with "[/INST]").
//
// Formats (as the reference templates write them):
//   Llama2  [INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]
//           contents trimmed; the system message folds into the next user turn
//   Llama3  <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>  (content trimmed)
//           generation prompt <|start_header_id|>assistant<|end_header_id|>\n\n
//   ChatML  <|im_start|>{role}\n{content}<|im_end|>\n   generation prompt <|im_start|>assistant\n
//   Zephyr  <|{role}|>\n{content}</s>\n                  generation prompt <|assistant|>\n
//   Plain   {system}\n  User: {user}\n  Assistant: {assistant}\n   generation prompt Assistant:
//
// Multi-turn promise: with `prompt = render_chat(f, msgs, true)` and the
// model's reply `reply`,
//   prompt + reply + chat_end_of_turn(f)
// is a prefix of render_chat(f, msgs + {assistant, reply} + {user, next}, true).
// `reply` is the text exactly as generated, before any stop string. Where the
// generation prompt ends in a word (Llama2 "[/INST]", Plain "Assistant:") a
// SentencePiece model's first piece carries the separating space (" Hello"),
// and the rendering of an assistant turn supplies that one space itself;
// Llama2 and Llama3 trim contents like their reference templates, so there a
// reply with extra surrounding whitespace breaks the prefix after the reply.
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt);

// What the caller appends after a generated reply (the model's own end token
// may have stopped generation, but it is not part of the reply text):
// Llama2 " </s>", Llama3 "<|eot_id|>", ChatML "<|im_end|>\n", Zephyr "</s>\n",
// Plain "\n".
std::string chat_end_of_turn(ChatFormat format);

// Text that ends the assistant's turn when it appears in the generated text
// (beyond the tokenizer's end-of-generation tokens); callers stop there.
std::vector<std::string> chat_stop_strings(ChatFormat format);

}  // namespace clm
