// The chat renderer: a model's Jinja template rendered into prompt text with
// one BOS, stop strings and the end of a turn found by probing the
// template, the choice between the template and the hand-written formats,
// and what the multi-turn prefix promise is for real templates.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "model/chat_renderer.h"
#include "model/gguf.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer.h"
#include "support/vocab_model.h"

namespace clm {
namespace {

using Model = test::VocabModel;

// A vocabulary-only GGUF ("llama": SentencePiece, adds <s>; "gpt2": ChatML
// control tokens, adds no BOS), with a chat template when one is given.
Model make_model(const char* vocab_model, const std::string& chat_template) {
  auto vocab = make_synthetic_vocab(vocab_model, 400);
  EXPECT_TRUE(vocab) << vocab.error().message;
  if (!vocab) return {};
  return test::make_vocab_model(*vocab, chat_template);
}

// A committed template of a real model; a missing file fails the test.
std::string real_template(const std::string& name) {
  std::ifstream in(std::string(CLMCACHE_CHAT_TEMPLATES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing chat template fixture " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatRenderer jinja_renderer(const std::string& source, const Tokenizer& tok) {
  auto r = ChatRenderer::jinja(source, tok);
  EXPECT_TRUE(r) << r.error().message;
  return r ? std::move(*r) : ChatRenderer::builtin(ChatFormat::Plain);
}

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi!"}};

TEST(ChatRenderer, ATemplateThatWritesBosGetsOneBos) {
  const auto m = make_model("llama", "");
  ASSERT_NE(m.tok, nullptr);
  ASSERT_TRUE(m.tok->add_bos());
  const ChatRenderer r = jinja_renderer(real_template("mistral-7b-instruct-v0.2.jinja"), *m.tok);
  const auto text = r.render(kChat, true);
  ASSERT_TRUE(text) << text.error().message;
  // The template writes "<s>" first; the tokenizer adds BOS itself, so the text loses it.
  EXPECT_EQ(*text, " [INST] Be brief.\n\nHi! [/INST]");
  const auto ids = m.tok->encode(*text, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], m.tok->bos_id());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), m.tok->bos_id()), 1);

  // Later BOS/EOS text in the history stays and becomes the tokens.
  std::vector<ChatMessage> more = kChat;
  more.push_back({"assistant", "Hello."});
  more.push_back({"user", "Bye."});
  const auto history = r.render(more, true);
  ASSERT_TRUE(history) << history.error().message;
  EXPECT_EQ(*history, " [INST] Be brief.\n\nHi! [/INST] Hello.</s> [INST] Bye. [/INST]");
  const auto history_ids = m.tok->encode(*history, true, true);
  EXPECT_EQ(std::count(history_ids.begin(), history_ids.end(), m.tok->eos_id()), 1);
}

TEST(ChatRenderer, BosStaysWhenTheTokenizerAddsNone) {
  const auto m = make_model("gpt2", "");
  ASSERT_NE(m.tok, nullptr);
  ASSERT_FALSE(m.tok->add_bos());
  const ChatRenderer r = jinja_renderer("{{ bos_token }}{{ messages[0].content }}", *m.tok);
  const auto text = r.render(kChat, true);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "<|endoftext|>Be brief.");
  const auto ids = m.tok->encode(*text, true, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], m.tok->bos_id());
}

TEST(ChatRenderer, StopStringsAndTheEndOfATurnComeFromTheTemplate) {
  const auto gpt2 = make_model("gpt2", "");
  ASSERT_NE(gpt2.tok, nullptr);
  for (const char* name : {"chatml-openhermes-2.5.jinja", "qwen2.5-7b-instruct.jinja", "qwen3-0.6b.jinja"}) {
    const ChatRenderer r = jinja_renderer(real_template(name), *gpt2.tok);
    EXPECT_EQ(r.end_of_turn(), "<|im_end|>\n") << name;
    EXPECT_EQ(r.stop_strings(), std::vector<std::string>{"<|im_end|>"}) << name;
    EXPECT_EQ(r.name(), "jinja");
    EXPECT_TRUE(r.is_jinja());
  }
  const auto llama = make_model("llama", "");
  ASSERT_NE(llama.tok, nullptr);
  const ChatRenderer mistral = jinja_renderer(real_template("mistral-7b-instruct-v0.2.jinja"), *llama.tok);
  EXPECT_EQ(mistral.end_of_turn(), "</s>");
  EXPECT_EQ(mistral.stop_strings(), std::vector<std::string>{"</s>"});
  const ChatRenderer spaced = jinja_renderer(
      "{% for m in messages %}{% if m.role == 'assistant' %} {{ m.content }} </s>{% else %}[INST] {{ m.content }} [/INST]"
      "{% endif %}{% endfor %}",
      *llama.tok);
  EXPECT_EQ(spaced.end_of_turn(), " </s>");
  EXPECT_EQ(spaced.stop_strings(), std::vector<std::string>{"</s>"});
  // No special token ends Gemma's turn in this vocabulary: no stop string.
  const ChatRenderer gemma = jinja_renderer(real_template("gemma-2-2b-it.jinja"), *llama.tok);
  EXPECT_EQ(gemma.end_of_turn(), "<end_of_turn>\n");
  EXPECT_TRUE(gemma.stop_strings().empty());
}

TEST(ChatRenderer, TemplateRefusalsAreErrors) {
  const auto m = make_model("llama", "");
  ASSERT_NE(m.tok, nullptr);
  const ChatRenderer gemma = jinja_renderer(real_template("gemma-2-2b-it.jinja"), *m.tok);
  const auto refused = gemma.render(kChat, true);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("System role not supported"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("line 1, column"), std::string::npos) << refused.error().message;
  const std::vector<ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
  const auto unordered = gemma.render(twice, true);
  ASSERT_FALSE(unordered);
  EXPECT_NE(unordered.error().message.find("must alternate"), std::string::npos);
  const auto fine = gemma.render(std::span(kChat).subspan(1), true);
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ(*fine, "<start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatRenderer, TheTemplateIsChosenByDefaultAndTheFormatsStaySelectable) {
  const std::string chatml = real_template("chatml-openhermes-2.5.jinja");
  const auto with_template = make_model("llama", chatml);
  ASSERT_NE(with_template.tok, nullptr);
  std::string warning;
  auto chosen = choose_chat_renderer(*with_template.file, *with_template.tok, {}, &warning);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->name(), "jinja");
  EXPECT_TRUE(warning.empty()) << warning;

  // A named format wins over the template.
  chosen = choose_chat_renderer(*with_template.file, *with_template.tok, {"llama3", std::nullopt}, &warning);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->name(), "llama3");
  EXPECT_EQ(*chosen->render(kChat, true), render_chat(ChatFormat::Llama3, kChat, true));

  // A given template wins over the file's.
  chosen = choose_chat_renderer(*with_template.file, *with_template.tok,
                                {"auto", std::string("{{ messages | length }} messages")}, &warning);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(*chosen->render(kChat, true), "2 messages");
  EXPECT_FALSE(choose_chat_renderer(*with_template.file, *with_template.tok, {"chatml", std::string("x")}, &warning));

  // Without a template: the detected format for auto, an error for jinja.
  const auto bare = make_model("gpt2", "");
  ASSERT_NE(bare.tok, nullptr);
  chosen = choose_chat_renderer(*bare.file, *bare.tok, {}, &warning);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->name(), "chatml");
  const auto required = choose_chat_renderer(*bare.file, *bare.tok, {"jinja", std::nullopt}, &warning);
  ASSERT_FALSE(required);
  EXPECT_NE(required.error().message.find("no chat template"), std::string::npos);

  const auto unknown = choose_chat_renderer(*bare.file, *bare.tok, {"nope", std::nullopt}, &warning);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("auto or jinja"), std::string::npos) << unknown.error().message;
}

TEST(ChatRenderer, ABrokenTemplateFallsBackWithAWarningUnlessRequired) {
  // Does not parse; and parses but fails on a plain conversation.
  for (const std::string broken : {"{% for m in messages %}<|im_start|>{{ m.content }}", "<|im_start|>{{ 1 | nope }}"}) {
    const auto m = make_model("gpt2", broken);
    ASSERT_NE(m.tok, nullptr);
    std::string warning;
    auto chosen = choose_chat_renderer(*m.file, *m.tok, {}, &warning);
    ASSERT_TRUE(chosen) << chosen.error().message;
    EXPECT_EQ(chosen->name(), "chatml");
    EXPECT_NE(warning.find("chat template cannot be used"), std::string::npos) << warning;
    EXPECT_NE(warning.find("line 1, column"), std::string::npos) << warning;
  }
  const auto m = make_model("gpt2", "{% if %}");
  ASSERT_NE(m.tok, nullptr);
  std::string warning;
  const auto required = choose_chat_renderer(*m.file, *m.tok, {"jinja", std::nullopt}, &warning);
  ASSERT_FALSE(required);
  EXPECT_EQ(required.error().message, "chat template: line 1, column 7: expected an expression, got '%}'");
}

// prompt + reply + end of turn is a prefix of the next turn's prompt: the
// cache reuses the whole conversation so far.
struct PrefixCase {
  const char* file;
  const char* vocab;
  bool system;  // open with a system message (Gemma takes none; see below for Nemo)
  const char* separator = "";  // what the template puts between the generation prompt and the reply
};

// The next turn's prompt for a conversation continued after `reply`, and
// this turn's prompt.
struct Turns {
  std::string prompt;
  std::string next;
};

Turns two_turns(const ChatRenderer& r, bool system, const std::string& reply) {
  std::vector<ChatMessage> msgs = {{"user", "Write a poem."}};
  if (system) msgs.insert(msgs.begin(), {"system", "Be kind."});
  const auto prompt = r.render(msgs, true);
  EXPECT_TRUE(prompt) << prompt.error().message;
  msgs.push_back({"assistant", reply});
  msgs.push_back({"user", "Another one."});
  const auto next = r.render(msgs, true);
  EXPECT_TRUE(next) << next.error().message;
  return {prompt.value_or(""), next.value_or("")};
}

TEST(ChatRenderer, MultiTurnPromptsExtendThePreviousTurn) {
  const std::vector<PrefixCase> cases = {
      {"llama-3.1-8b-instruct.jinja", "gpt2", true},
      {"llama-3.2-3b-instruct.jinja", "gpt2", true},
      {"qwen2.5-7b-instruct.jinja", "gpt2", true},
      {"qwen3-0.6b.jinja", "gpt2", true},
      {"chatml-openhermes-2.5.jinja", "gpt2", true},
      {"phi-3.5-mini-instruct.jinja", "llama", true},
      {"gemma-2-2b-it.jinja", "llama", false},
      {"mistral-nemo-instruct-2407.jinja", "llama", false},
      {"mistral-small-3.2-24b-instruct-2506.jinja", "llama", true},
      // These write a space before the assistant's text: SentencePiece replies
      // start with it, and the reply sent back is without it.
      {"mistral-7b-instruct-v0.2.jinja", "llama", true, " "},
      {"mistral-large-instruct-2411.jinja", "llama", true, " "},
  };
  const std::string reply = "Sure, here it is.";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const auto m = make_model(c.vocab, "");
    ASSERT_NE(m.tok, nullptr);
    const ChatRenderer r = jinja_renderer(real_template(c.file), *m.tok);
    const Turns t = two_turns(r, c.system, reply);
    EXPECT_TRUE(t.next.starts_with(t.prompt + c.separator + reply + r.end_of_turn()))
        << "prompt: " << t.prompt << "\nnext: " << t.next << "\nend of turn: " << r.end_of_turn();
  }
}

TEST(ChatRenderer, MistralNemoMovesTheSystemMessageToTheLastTurn) {
  const auto m = make_model("llama", "");
  ASSERT_NE(m.tok, nullptr);
  const ChatRenderer r = jinja_renderer(real_template("mistral-nemo-instruct-2407.jinja"), *m.tok);
  const Turns t = two_turns(r, true, "Sure.");
  EXPECT_EQ(t.prompt, "[INST]Be kind.\n\nWrite a poem.[/INST]");
  EXPECT_EQ(t.next, "[INST]Write a poem.[/INST]Sure.</s>[INST]Be kind.\n\nAnother one.[/INST]");
}

TEST(ChatRenderer, Qwen3DropsEarlierReasoningSoItsPrefixBreaks) {
  const auto m = make_model("gpt2", "");
  ASSERT_NE(m.tok, nullptr);
  const ChatRenderer r = jinja_renderer(real_template("qwen3-0.6b.jinja"), *m.tok);
  std::vector<ChatMessage> msgs = {{"user", "2+2?"}};
  const auto prompt = r.render(msgs, true);
  ASSERT_TRUE(prompt);
  const std::string reply = "<think>\nAdd them.\n</think>\n\n4";
  msgs.push_back({"assistant", reply});
  msgs.push_back({"user", "3+3?"});
  const auto next = r.render(msgs, true);
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->starts_with(*prompt + reply));
  // The history keeps only the answer.
  EXPECT_NE(next->find("<|im_start|>assistant\n4<|im_end|>\n"), std::string::npos) << *next;
  EXPECT_EQ(next->find("Add them."), std::string::npos);
}

}  // namespace
}  // namespace clm
