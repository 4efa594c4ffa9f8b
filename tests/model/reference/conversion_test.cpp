// What make-model --tokenizer-json writes for the real Llama-3 and Qwen3
// files: the vocabulary size, the special tokens and their types, the
// add-BOS behaviour llama.cpp gives these families, and the chat template.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/reference/real_vocab.h"
#include "model/vocab_metadata.h"

namespace clm {
namespace {

std::string config_chat_template(const test::RealVocab& vocab) {
  std::ifstream in(vocab.tokenizer_config);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto config = nlohmann::json::parse(ss.str(), nullptr, false);
  EXPECT_TRUE(config.is_object() && config.contains("chat_template") && config["chat_template"].is_string());
  return config.value("chat_template", std::string());
}

TEST(RealVocabConversion, Llama3) {
  const test::RealVocab* vocab = test::real_vocab("llama3");
  ASSERT_NE(vocab, nullptr);
  const Tokenizer& tok = *vocab->tokenizer;
  EXPECT_EQ(tok.n_vocab(), 128256);
  EXPECT_EQ(vocab->file->get_string("tokenizer.ggml.pre").value_or(""), "llama-bpe");
  EXPECT_EQ(vocab->file->find(kNormalizerKey), nullptr);  // its normalizer is null
  EXPECT_NE(tok.encode("e\xCC\x81", false, false), tok.encode("\xC3\xA9", false, false));  // not normalized
  EXPECT_EQ(tok.bos_id(), 128000);
  EXPECT_EQ(tok.token_text(128000), "<|begin_of_text|>");
  EXPECT_EQ(tok.eos_id(), 128001);
  EXPECT_EQ(tok.token_type(128009), TokenType::Control);
  EXPECT_EQ(tok.token_text(128009), "<|eot_id|>");
  EXPECT_TRUE(tok.is_end_of_generation(128009));
  EXPECT_EQ(tok.token_type(128255), TokenType::Control);  // <|reserved_special_token_250|>
  EXPECT_EQ(tok.token_type(9906), TokenType::Normal);     // "Hello"
  // This tokenizer.json predates Llama-3's TemplateProcessing, so no
  // add_bos_token is written, and llama.cpp's Llama-3 default adds BOS.
  EXPECT_EQ(vocab->file->find("tokenizer.ggml.add_bos_token"), nullptr);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.encode("Hello world", true, false), (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_EQ(vocab->file->get_string("tokenizer.chat_template").value_or(""), config_chat_template(*vocab));
}

TEST(RealVocabConversion, Qwen3) {
  const test::RealVocab* vocab = test::real_vocab("qwen3");
  ASSERT_NE(vocab, nullptr);
  const Tokenizer& tok = *vocab->tokenizer;
  EXPECT_EQ(tok.n_vocab(), 151669);
  EXPECT_EQ(vocab->file->get_string("tokenizer.ggml.pre").value_or(""), "qwen2");
  // Its normalizer is NFC: a decomposed é encodes as the composed one.
  EXPECT_EQ(vocab->file->get_string(kNormalizerKey).value_or(""), "NFC");
  EXPECT_EQ(tok.encode("cafe\xCC\x81", false, false), tok.encode("caf\xC3\xA9", false, false));
  EXPECT_EQ(tok.bos_id(), -1);  // bos_token is null
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.eos_id(), 151645);
  EXPECT_EQ(tok.token_text(151645), "<|im_end|>");
  EXPECT_EQ(vocab->file->get_uint("tokenizer.ggml.padding_token_id").value_or(0), 151643u);
  EXPECT_TRUE(tok.is_end_of_generation(151643));  // <|endoftext|>
  EXPECT_TRUE(tok.is_end_of_generation(151645));
  // Added but not special: user-defined, always matched in text...
  EXPECT_EQ(tok.token_type(151667), TokenType::UserDefined);
  EXPECT_EQ(tok.token_text(151667), "<think>");
  EXPECT_EQ(tok.encode("<think>", false, false), std::vector<int32_t>{151667});
  // ...unless it looks like a control token, as llama.cpp's converter decides.
  EXPECT_EQ(tok.token_type(151659), TokenType::Control);
  EXPECT_EQ(tok.token_text(151659), "<|fim_prefix|>");
  EXPECT_EQ(tok.encode("Hello world", true, false), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(vocab->file->get_string("tokenizer.chat_template").value_or(""), config_chat_template(*vocab));
}

}  // namespace
}  // namespace clm
