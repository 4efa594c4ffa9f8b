// Chat templates: the exact text of every format, detection from GGUF
// metadata and vocabulary, names, and the append-only property across turns
// that lets multi-turn chat reuse the prefix cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/chat_template.h"
#include "model/gguf.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"
#include "support/vocab_model.h"

namespace clm {
namespace {

constexpr ChatFormat kAllFormats[] = {ChatFormat::Llama2, ChatFormat::Llama3, ChatFormat::ChatML,
                                      ChatFormat::Zephyr, ChatFormat::Plain};

using Model = test::VocabModel;

Model make_model(const SyntheticVocab& vocab, const std::string& chat_template) {
  return test::make_vocab_model(vocab, chat_template);
}

SyntheticVocab vocab(const char* model) {
  auto v = make_synthetic_vocab(model, 400);
  EXPECT_TRUE(v) << v.error().message;
  return *v;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "You are terse."},
    {"user", "Hi!"},
    {"assistant", "Hello."},
};

TEST(ChatTemplate, ExactTextOfAThreeMessageConversation) {
  EXPECT_EQ(render_chat(ChatFormat::Llama2, kConversation, false),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi! [/INST] Hello. </s>");
  EXPECT_EQ(render_chat(ChatFormat::Llama3, kConversation, false),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, kConversation, false),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n");
  EXPECT_EQ(render_chat(ChatFormat::Zephyr, kConversation, false),
            "<|system|>\nYou are terse.</s>\n<|user|>\nHi!</s>\n<|assistant|>\nHello.</s>\n");
  EXPECT_EQ(render_chat(ChatFormat::Plain, kConversation, false),
            "You are terse.\nUser: Hi!\nAssistant: Hello.\n");
}

TEST(ChatTemplate, GenerationPromptAndFollowingTurns) {
  std::vector<ChatMessage> msgs = kConversation;
  msgs.push_back({"user", "Why?"});
  EXPECT_EQ(render_chat(ChatFormat::Llama2, msgs, true),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi! [/INST] Hello. </s><s>[INST] Why? [/INST]");
  // Llama2 has no separate assistant header: the user turn is the cue.
  EXPECT_EQ(render_chat(ChatFormat::Llama2, msgs, false), render_chat(ChatFormat::Llama2, msgs, true));
  EXPECT_EQ(render_chat(ChatFormat::Llama3, msgs, true),
            render_chat(ChatFormat::Llama3, kConversation, false) +
                "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, msgs, true),
            render_chat(ChatFormat::ChatML, kConversation, false) +
                "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::Zephyr, msgs, true),
            render_chat(ChatFormat::Zephyr, kConversation, false) + "<|user|>\nWhy?</s>\n<|assistant|>\n");
  EXPECT_EQ(render_chat(ChatFormat::Plain, msgs, true),
            "You are terse.\nUser: Hi!\nAssistant: Hello.\nUser: Why?\nAssistant:");
}

TEST(ChatTemplate, Llama2WithoutSystemAndWithSystemAlone) {
  const std::vector<ChatMessage> plain_turns = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  EXPECT_EQ(render_chat(ChatFormat::Llama2, plain_turns, true), "[INST] a [/INST] b </s><s>[INST] c [/INST]");
  const std::vector<ChatMessage> system_only = {{"system", "Be kind."}};
  EXPECT_EQ(render_chat(ChatFormat::Llama2, system_only, true), "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\n [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::Llama2, std::span<const ChatMessage>{}, true), "");
}

TEST(ChatTemplate, Llama2AndLlama3TrimContentsAsTheirReferencesDo) {
  const std::vector<ChatMessage> msgs = {{"user", "  Hi \n"}, {"assistant", " Hello.\n"}};
  EXPECT_EQ(render_chat(ChatFormat::Llama2, msgs, false), "[INST] Hi [/INST] Hello. </s>");
  EXPECT_EQ(render_chat(ChatFormat::Llama3, msgs, false),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>");
  // ChatML and Zephyr keep contents verbatim.
  EXPECT_EQ(render_chat(ChatFormat::ChatML, msgs, false),
            "<|im_start|>user\n  Hi \n<|im_end|>\n<|im_start|>assistant\n Hello.\n<|im_end|>\n");
}

TEST(ChatTemplate, NamesRoundTripAndUnknownNamesListTheValidOnes) {
  for (ChatFormat f : kAllFormats) {
    auto parsed = parse_chat_format(chat_format_name(f));
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(chat_format_name(ChatFormat::ChatML), "chatml");
  auto bad = parse_chat_format("mistral");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("mistral"), std::string::npos);
  EXPECT_NE(bad.error().message.find("llama2, llama3, chatml, zephyr, plain"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(parse_chat_format(""));
}

TEST(ChatTemplate, EveryFormatHasAnEndOfTurnAndStopStrings) {
  EXPECT_EQ(chat_end_of_turn(ChatFormat::Llama2), " </s>");
  EXPECT_EQ(chat_end_of_turn(ChatFormat::Llama3), "<|eot_id|>");
  EXPECT_EQ(chat_end_of_turn(ChatFormat::ChatML), "<|im_end|>\n");
  EXPECT_EQ(chat_end_of_turn(ChatFormat::Zephyr), "</s>\n");
  EXPECT_EQ(chat_end_of_turn(ChatFormat::Plain), "\n");
  auto has = [](ChatFormat f, const std::string& s) {
    const auto stops = chat_stop_strings(f);
    return std::find(stops.begin(), stops.end(), s) != stops.end();
  };
  EXPECT_TRUE(has(ChatFormat::Llama2, "</s>"));
  EXPECT_TRUE(has(ChatFormat::Llama2, "[INST]"));
  EXPECT_TRUE(has(ChatFormat::Llama3, "<|eot_id|>"));
  EXPECT_TRUE(has(ChatFormat::ChatML, "<|im_end|>"));
  EXPECT_TRUE(has(ChatFormat::Zephyr, "</s>"));
  EXPECT_TRUE(has(ChatFormat::Plain, "\nUser:"));
}

// The reply as a model emits it right after the generation prompt: after a
// word ("[/INST]", "Assistant:") a SentencePiece model's first piece carries
// the separating space; after a newline it does not.
std::string generated_reply(ChatFormat f, const std::string& text) {
  return (f == ChatFormat::Llama2 || f == ChatFormat::Plain) ? " " + text : text;
}

TEST(ChatTemplate, PromptPlusReplyPlusEndOfTurnIsAPrefixOfTheNextTurn) {
  for (ChatFormat f : kAllFormats) {
    SCOPED_TRACE(std::string(chat_format_name(f)));
    std::vector<ChatMessage> msgs = {{"system", "You are terse."}, {"user", "Hi!"}};
    // Several rounds, so the property holds from any point of a conversation.
    for (int round = 0; round < 3; ++round) {
      const std::string prompt = render_chat(f, msgs, true);
      const std::string reply = generated_reply(f, "Hello there, round " + std::to_string(round) + ".");
      msgs.push_back({"assistant", reply});
      msgs.push_back({"user", "And then " + std::to_string(round) + "?"});
      const std::string next = render_chat(f, msgs, true);
      const std::string head = prompt + reply + chat_end_of_turn(f);
      ASSERT_LE(head.size(), next.size());
      EXPECT_EQ(next.substr(0, head.size()), head) << "round " << round;
      // Without the generation prompt the history is a prefix too.
      const std::string history = render_chat(f, std::span(msgs).first(msgs.size() - 1), false);
      EXPECT_EQ(next.substr(0, history.size()), history);
    }
  }
}

TEST(ChatTemplate, PlainAcceptsRepliesWithOrWithoutTheirLeadingSpace) {
  const std::vector<ChatMessage> a = {{"user", "Hi"}, {"assistant", "Hello"}};
  const std::vector<ChatMessage> b = {{"user", "Hi"}, {"assistant", " Hello"}};
  EXPECT_EQ(render_chat(ChatFormat::Plain, a, false), "User: Hi\nAssistant: Hello\n");
  EXPECT_EQ(render_chat(ChatFormat::Plain, b, false), "User: Hi\nAssistant: Hello\n");
}

TEST(ChatTemplate, DetectsTheFormatFromTheTemplateString) {
  struct Case {
    std::string tmpl;
    ChatFormat want;
  };
  const std::vector<Case> cases = {
      {"{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] "
       "| trim + '<|eot_id|>' }}{% endfor %}",
       ChatFormat::Llama3},
      {"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n'}}"
       "{% endfor %}",
       ChatFormat::ChatML},
      {"{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' "
       "}}{% endif %}{% endfor %}",
       ChatFormat::Llama2},
      {"{% for m in messages %}{% if m['role'] == 'user' %}{{ '<|user|>\\n' + m['content'] + eos_token }}"
       "{% endif %}{% endfor %}",
       ChatFormat::Zephyr},
  };
  // A llama vocabulary has none of the marker tokens, so only the template decides.
  for (const auto& c : cases) {
    auto m = make_model(vocab("llama"), c.tmpl);
    ASSERT_NE(m.tok, nullptr);
    EXPECT_EQ(detect_chat_format(*m.file, *m.tok), c.want) << c.tmpl;
  }
  // The template wins over the vocabulary.
  auto llama2_on_gpt2 = make_model(vocab("gpt2"), cases[2].tmpl);
  ASSERT_NE(llama2_on_gpt2.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*llama2_on_gpt2.file, *llama2_on_gpt2.tok), ChatFormat::Llama2);
}

TEST(ChatTemplate, FallsBackToTheVocabularyThenToPlain) {
  // The synthetic gpt2 vocabulary has <|im_start|> and <|im_end|>.
  auto chatml = make_model(vocab("gpt2"), "");
  ASSERT_NE(chatml.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*chatml.file, *chatml.tok), ChatFormat::ChatML);
  // An unrecognised template defers to the vocabulary.
  auto unknown = make_model(vocab("gpt2"), "{{ messages | join }}");
  ASSERT_NE(unknown.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*unknown.file, *unknown.tok), ChatFormat::ChatML);

  // The same vocabulary with Llama3's header token in place of ChatML's.
  SyntheticVocab llama3 = vocab("gpt2");
  const auto marker = std::find(llama3.tokens.begin(), llama3.tokens.end(), "<|im_start|>");
  ASSERT_NE(marker, llama3.tokens.end());
  *marker = "<|start_header_id|>";
  auto l3 = make_model(llama3, "");
  ASSERT_NE(l3.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*l3.file, *l3.tok), ChatFormat::Llama3);

  auto plain = make_model(vocab("llama"), "");
  ASSERT_NE(plain.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*plain.file, *plain.tok), ChatFormat::Plain);
  auto plain_unknown = make_model(vocab("llama"), "{{ messages | join }}");
  ASSERT_NE(plain_unknown.tok, nullptr);
  EXPECT_EQ(detect_chat_format(*plain_unknown.file, *plain_unknown.tok), ChatFormat::Plain);
}

TEST(ChatTemplate, StoriesModelHasNoTemplateAndIsPlain) {
  auto file = GgufFile::open(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok) << tok.error().message;
  EXPECT_EQ(detect_chat_format(*file, **tok), ChatFormat::Plain);

  // Rendering plus the tokenizer's own BOS gives exactly one leading BOS.
  for (ChatFormat f : {ChatFormat::Plain, ChatFormat::Llama2}) {
    const auto ids = (*tok)->encode(render_chat(f, kConversation, true), true, true);
    ASSERT_GE(ids.size(), 2u);
    EXPECT_EQ(ids[0], (*tok)->bos_id());
    EXPECT_NE(ids[1], (*tok)->bos_id()) << chat_format_name(f);
  }
}

TEST(ChatTemplate, SpecialTokensOfTheRenderingEncodeAsSingleTokens) {
  auto m = make_model(vocab("gpt2"), "");
  ASSERT_NE(m.tok, nullptr);
  const auto im_start = m.tok->find_token("<|im_start|>");
  const auto im_end = m.tok->find_token("<|im_end|>");
  ASSERT_TRUE(im_start && im_end);
  const std::string text = render_chat(ChatFormat::ChatML, kConversation, true);
  auto count = [](const std::vector<int32_t>& ids, int32_t id) { return std::count(ids.begin(), ids.end(), id); };

  const auto ids = m.tok->encode(text, true, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), *im_start);  // gpt2 adds no BOS
  EXPECT_EQ(count(ids, *im_start), 4);
  EXPECT_EQ(count(ids, *im_end), 3);
  std::string rendered;
  for (int32_t id : ids) rendered += m.tok->token_to_piece(id, true);
  EXPECT_EQ(rendered, text);

  // Without parse_special the markers are ordinary text.
  const auto literal = m.tok->encode(text, true, false);
  EXPECT_EQ(count(literal, *im_start), 0);
  EXPECT_EQ(count(literal, *im_end), 0);
}

TEST(ChatTemplate, Llama2HistoryBosIsParsedAndTheFirstComesFromTheTokenizer) {
  auto m = make_model(vocab("llama"), "");
  ASSERT_NE(m.tok, nullptr);
  ASSERT_TRUE(m.tok->add_bos());
  std::vector<ChatMessage> msgs = kConversation;
  msgs.push_back({"user", "Why?"});
  const auto ids = m.tok->encode(render_chat(ChatFormat::Llama2, msgs, true), true, true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], m.tok->bos_id());
  EXPECT_NE(ids[1], m.tok->bos_id());
  // The BOS the tokenizer added plus the "<s>" that opens the second exchange.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), m.tok->bos_id()), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), m.tok->eos_id()), 1);
}

}  // namespace
}  // namespace clm
