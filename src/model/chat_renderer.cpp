#include "model/chat_renderer.h"

#include <algorithm>

#include "model/chat_content_ranges.h"

namespace clm {

struct ChatRenderer::Jinja {
  jinja::Template tmpl;
  std::string bos_text;
  std::string eos_text;
  bool tokenizer_adds_bos = false;
  bool tokenizer_adds_eos = false;
};

namespace {

jinja::Dict chat_context(std::span<const ChatMessage> messages, bool add_generation_prompt, const std::string& bos,
                         const std::string& eos) {
  jinja::ValueList list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::Dict d;
    d.append("role", jinja::Value::string(m.role));
    d.append("content", jinja::Value::string(m.content));
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  jinja::Dict context;
  context.append("messages", jinja::Value::list(std::move(list)));
  context.append("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  context.append("bos_token", jinja::Value::string(bos));
  context.append("eos_token", jinja::Value::string(eos));
  return context;
}

std::string token_text_or_empty(const Tokenizer& tok, int32_t id) {
  return id >= 0 && id < tok.n_vocab() ? std::string(tok.token_text(id)) : std::string();
}

// Distinctive texts for probing a template, unlikely to be changed by it.
constexpr const char* kProbeQuestion = "clmcache-probe-question";
constexpr const char* kProbeAnswer = "clmcache-probe-answer";
constexpr const char* kProbeFollowUp = "clmcache-probe-follow-up";

// The text after the last occurrence of `marker`, or nothing.
std::optional<std::string> text_after(const std::string& text, std::string_view marker) {
  const std::size_t at = text.rfind(marker);
  if (at == std::string::npos) return std::nullopt;
  return text.substr(at + marker.size());
}

}  // namespace

ChatRenderer ChatRenderer::builtin(ChatFormat format) {
  ChatRenderer r;
  r.format_ = format;
  r.stop_strings_ = chat_stop_strings(format);
  r.end_of_turn_ = chat_end_of_turn(format);
  return r;
}

Result<ChatRenderer> ChatRenderer::jinja(std::string_view source, const Tokenizer& tokenizer) {
  auto parsed = jinja::Template::parse(source);
  if (!parsed) return fail("chat template: " + parsed.error().message);
  auto j = std::make_shared<Jinja>(Jinja{std::move(*parsed), token_text_or_empty(tokenizer, tokenizer.bos_id()),
                                         token_text_or_empty(tokenizer, tokenizer.eos_id()), tokenizer.add_bos(),
                                         tokenizer.add_eos()});
  ChatRenderer r;
  r.jinja_ = std::move(j);
  auto controls = std::make_shared<std::vector<std::string>>();
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    const TokenType type = tokenizer.token_type(id);
    if ((type == TokenType::Control || type == TokenType::Unknown) && !tokenizer.token_text(id).empty())
      controls->emplace_back(tokenizer.token_text(id));
  }
  r.control_texts_ = std::move(controls);

  // What follows an assistant message: the common start of what comes after
  // it when it ends the conversation and when a user turn follows.
  const std::vector<ChatMessage> answered = {{"user", kProbeQuestion}, {"assistant", kProbeAnswer}};
  std::vector<ChatMessage> continued = answered;
  continued.push_back({"user", kProbeFollowUp});
  const auto last = r.render(answered, false);
  const auto next = r.render(continued, false);
  if (last && next) {
    const auto a = text_after(*last, kProbeAnswer);
    const auto b = text_after(*next, kProbeAnswer);
    if (a && b) {
      const auto diff = std::mismatch(a->begin(), a->end(), b->begin(), b->end());
      r.end_of_turn_.assign(a->begin(), diff.first);
    }
  }
  // A special token that opens the end of the turn (after any whitespace)
  // is where a reply stops.
  const std::size_t first = r.end_of_turn_.find_first_not_of(" \t\r\n");
  if (first != std::string::npos) {
    const auto ids = tokenizer.encode(std::string_view(r.end_of_turn_).substr(first), /*add_special=*/false,
                                      /*parse_special=*/true);
    if (!ids.empty()) {
      const TokenType type = tokenizer.token_type(ids[0]);
      if (type == TokenType::Control || type == TokenType::UserDefined) {
        r.stop_strings_.emplace_back(tokenizer.token_text(ids[0]));
      }
    }
  }
  return r;
}

Result<std::string> ChatRenderer::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  if (!jinja_) return render_chat(format_, messages, add_generation_prompt);
  const Jinja& j = *jinja_;
  auto text = j.tmpl.render(chat_context(messages, add_generation_prompt, j.bos_text, j.eos_text));
  if (!text) return fail("chat template: " + text.error().message);
  // The tokenizer adds BOS (and EOS) itself; the template's copy would double it.
  if (j.tokenizer_adds_bos && !j.bos_text.empty() && text->starts_with(j.bos_text)) text->erase(0, j.bos_text.size());
  if (j.tokenizer_adds_eos && !j.eos_text.empty() && text->ends_with(j.eos_text)) {
    text->resize(text->size() - j.eos_text.size());
  }
  return text;
}

Result<PromptText> ChatRenderer::render_prompt(std::span<const ChatMessage> messages,
                                               bool add_generation_prompt) const {
  auto text = render(messages, add_generation_prompt);
  if (!text) return std::unexpected(text.error());
  if (const auto wrapped = wrap_contents(messages)) {
    const auto marked = render(*wrapped, add_generation_prompt);
    if (marked) {
      if (auto located = locate_contents(*text, *marked)) return std::move(*located);
    }
  }
  // The hand-written formats write contents as given or trimmed, so only a
  // content holding the sentinels ends here; without the vocabulary's
  // control tokens at hand, it is refused rather than parsed.
  if (!control_texts_)
    return fail(ErrorKind::InvalidRequest, "a message contains the noncharacters U+FDD0/U+FDD1, which the " +
                                               std::string(name()) + " chat format cannot render as text");
  // A template that rewrites contents is safe only while no content could
  // be read as a control token.
  for (std::size_t i = 0; i < messages.size(); ++i)
    for (const std::string& control : *control_texts_)
      if (messages[i].content.find(control) != std::string::npos)
        return fail(ErrorKind::InvalidRequest, "message " + std::to_string(i) + " contains the special token text '" +
                                                   control +
                                                   "', which this chat template's rendering cannot keep as plain text");
  return PromptText::parsed(std::move(*text));
}

std::string_view ChatRenderer::name() const { return jinja_ ? "jinja" : chat_format_name(format_); }

Result<ChatRenderer> choose_chat_renderer(const GgufFile& file, const Tokenizer& tokenizer,
                                          const ChatRendererChoice& choice, std::string* warning) {
  const bool want_template = choice.format == "auto" || choice.format == "jinja";
  if (!want_template) {
    auto format = parse_chat_format(choice.format);
    if (!format) return fail(format.error().message + ", auto or jinja");
    if (choice.template_source) {
      return fail("a chat template file cannot be combined with the chat format '" + choice.format + "'");
    }
    return ChatRenderer::builtin(*format);
  }
  // A template the user gave must work; so must the file's when asked for.
  if (choice.template_source) return ChatRenderer::jinja(*choice.template_source, tokenizer);
  const auto source = file.get_string("tokenizer.chat_template");
  if (choice.format == "jinja") {
    if (!source) return fail("the model has no chat template (tokenizer.chat_template); give one with a file");
    return ChatRenderer::jinja(*source, tokenizer);
  }
  const ChatFormat detected = detect_chat_format(file, tokenizer);
  if (!source) return ChatRenderer::builtin(detected);
  auto renderer = ChatRenderer::jinja(*source, tokenizer);
  std::string problem;
  if (renderer) {
    const std::vector<ChatMessage> hello = {{"user", "Hello"}};
    auto probe = renderer->render(hello, true);
    if (probe) return renderer;
    problem = probe.error().message;
  } else {
    problem = renderer.error().message;
  }
  if (warning) {
    *warning = "the model's chat template cannot be used (" + problem + "); using the " +
               std::string(chat_format_name(detected)) + " format instead";
  }
  return ChatRenderer::builtin(detected);
}

}  // namespace clm
