// Tokenizer behaviour beyond the reference vectors: the real model's golden
// prompts, BOS/EOS handling, special-token parsing and refusals.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"

namespace clm {
namespace {

struct Loaded {
  GgufFile file;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(const std::string& relative) {
  auto file = GgufFile::open(test::shared_file(relative));
  EXPECT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok) << tok.error().message;
  return {std::move(*file), std::move(*tok)};
}

Loaded load_vocab(const std::string& name) { return load("testdata/tokenizer/ggml-vocab-" + name + ".gguf"); }

TEST(Tokenizer, StoriesGoldenPromptsAndGeneratedText) {
  auto [file, tok] = load("models/stories260K.gguf");
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->add_bos());  // absent key: the llama default

  std::ifstream in(test::shared_file("golden/stories260K.jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const std::string prompt = j.at("prompt");
    const auto prompt_ids = j.at("prompt_token_ids").get<std::vector<int32_t>>();
    const auto gen_ids = j.at("generated_token_ids").get<std::vector<int32_t>>();
    const std::string gen_text = j.at("generated_text");

    EXPECT_EQ(tok->encode(prompt, true, false), prompt_ids) << prompt;
    // Generated ids continue the prompt, so their leading "▁" stays a space.
    EXPECT_EQ(tok->decode(gen_ids), gen_text) << prompt;
    // A whole sequence from BOS loses only the prefix space encode added.
    EXPECT_EQ(tok->decode(prompt_ids), prompt);
    std::vector<int32_t> all = prompt_ids;
    all.insert(all.end(), gen_ids.begin(), gen_ids.end());
    EXPECT_EQ(tok->decode(all), prompt + gen_text);
    ++n;
  }
  EXPECT_EQ(n, 8);
}

TEST(Tokenizer, StoriesGreedySampleDecodes) {
  auto [file, tok] = load("models/stories260K.gguf");
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426};
  EXPECT_EQ(tok->decode(ids), "Once upon a time, there was a little girl named Lily.");
  EXPECT_EQ(tok->token_to_piece(403), " Once");
  EXPECT_EQ(tok->token_to_piece(13), "\n");  // byte token <0x0A>
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
}

TEST(Tokenizer, SpmBosEosAndEndOfGeneration) {
  auto [file, tok] = load_vocab("llama-spm");
  const auto plain = tok->encode("Hello world", false, false);
  const auto with_bos = tok->encode("Hello world", true, false);
  ASSERT_EQ(with_bos.size(), plain.size() + 1);
  EXPECT_EQ(with_bos.front(), 1);
  EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), plain);
  EXPECT_TRUE(tok->is_end_of_generation(2));
  EXPECT_FALSE(tok->is_end_of_generation(1));
  EXPECT_FALSE(tok->is_end_of_generation(plain.front()));
  EXPECT_EQ(tok->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(tok->encode("", false, false).empty());
}

TEST(Tokenizer, SpmParseSpecial) {
  auto [file, tok] = load_vocab("llama-spm");
  const auto hello = tok->encode("Hello", false, false);
  const auto parsed = tok->encode("<s>Hello</s>", false, true);
  std::vector<int32_t> want = {1};
  want.insert(want.end(), hello.begin(), hello.end());
  want.push_back(2);
  EXPECT_EQ(parsed, want);
  // Without parse_special the same text is just text.
  const auto literal = tok->encode("<s>Hello</s>", false, false);
  for (int32_t id : literal) {
    EXPECT_NE(id, 1);
    EXPECT_NE(id, 2);
  }
  EXPECT_EQ(tok->decode(literal), " <s>Hello</s>");
}

TEST(Tokenizer, LongestSpecialTokenWins) {
  auto [file, tok] = load_vocab("phi-3");
  EXPECT_EQ(tok->eos_id(), 32000);
  EXPECT_EQ(tok->encode("<|endoftext|>", false, true), std::vector<int32_t>{32000});
  EXPECT_EQ(tok->encode("<|end|><|endoftext|>", false, true), (std::vector<int32_t>{32007, 32000}));
  EXPECT_TRUE(tok->is_end_of_generation(32000));
  EXPECT_TRUE(tok->is_end_of_generation(32007));  // "<|end|>" closes a chat turn
}

TEST(Tokenizer, Gpt2SpecialsAndDefaults) {
  auto [file, tok] = load_vocab("gpt-2");
  EXPECT_FALSE(tok->add_bos());  // gpt2 default when the key is absent
  EXPECT_EQ(tok->encode("Hello", true, false), tok->encode("Hello", false, false));
  EXPECT_EQ(tok->encode("<|endoftext|>", false, true), std::vector<int32_t>{50256});
  const auto literal = tok->encode("<|endoftext|>", false, false);
  EXPECT_GT(literal.size(), 1u);
  EXPECT_EQ(tok->decode(literal), "<|endoftext|>");
  const std::string text = "Hello, y'all! 🦙 нещо\n\n  x";
  EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
  EXPECT_TRUE(tok->is_end_of_generation(50256));
}

TEST(Tokenizer, AddBosFromMetadata) {
  auto [file, tok] = load_vocab("deepseek-coder");
  EXPECT_TRUE(tok->add_bos());
  const auto ids = tok->encode("int main()", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 32013);
  EXPECT_EQ(tok->decode(ids), "int main()");  // byte-level BPE adds no space to strip
}

std::unique_ptr<Tokenizer> from_metadata(std::string model, std::string pre, std::string* error) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", std::move(model));
  if (!pre.empty()) w.add_string("tokenizer.ggml.pre", std::move(pre));
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  const auto bytes = w.serialize();
  auto file = GgufFile::parse(bytes);
  EXPECT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok) {
    *error = tok.error().message;
    return nullptr;
  }
  return std::move(*tok);
}

TEST(Tokenizer, RefusesUnknownModelAndPreByName) {
  std::string error;
  EXPECT_EQ(from_metadata("wordpiece-x", "", &error), nullptr);
  EXPECT_NE(error.find("wordpiece-x"), std::string::npos) << error;
  EXPECT_EQ(from_metadata("gpt2", "no-such-pre", &error), nullptr);
  EXPECT_NE(error.find("no-such-pre"), std::string::npos) << error;
  auto tok = from_metadata("gpt2", "", &error);  // absent pre: the GPT-2 pattern
  ASSERT_NE(tok, nullptr) << error;
  EXPECT_EQ(tok->encode("ab", false, false), std::vector<int32_t>{2});
  EXPECT_EQ(tok->encode("ba", false, false), (std::vector<int32_t>{1, 0}));
}

// A byte-level vocabulary where no merge makes "abc": only "a b" merges.
std::unique_ptr<Tokenizer> whole_word_vocab(const std::string& pre, std::optional<bool> add_bos) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "abc", "<|begin_of_text|>"});
  w.add_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 3});
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  w.add_u32("tokenizer.ggml.bos_token_id", 5);
  if (add_bos) w.add_bool("tokenizer.ggml.add_bos_token", *add_bos);
  const auto bytes = w.serialize();
  auto file = GgufFile::parse(bytes);
  EXPECT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok) << tok.error().message;
  return tok ? std::move(*tok) : nullptr;
}

// llama.cpp's Llama-3 names look a whole word up before merging (Hugging
// Face's ignore_merges) and add BOS unless the file says not to; other
// byte-level families do neither.
TEST(Tokenizer, Llama3WholeWordLookupAndBosDefault) {
  for (const char* pre : {"llama-bpe", "llama3", "llama-v3"}) {
    auto tok = whole_word_vocab(pre, std::nullopt);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->encode("abc", false, false), std::vector<int32_t>{4}) << pre;
    EXPECT_EQ(tok->encode("abcab", false, false), (std::vector<int32_t>{3, 2, 3})) << pre;  // not a token: merges
    EXPECT_TRUE(tok->add_bos()) << pre;
    EXPECT_EQ(tok->encode("abc", true, false), (std::vector<int32_t>{5, 4})) << pre;
  }
  auto no_bos = whole_word_vocab("llama-bpe", false);
  ASSERT_NE(no_bos, nullptr);
  EXPECT_FALSE(no_bos->add_bos());
  EXPECT_EQ(no_bos->encode("abc", true, false), std::vector<int32_t>{4});

  auto qwen = whole_word_vocab("qwen2", std::nullopt);
  ASSERT_NE(qwen, nullptr);
  EXPECT_EQ(qwen->encode("abc", false, false), (std::vector<int32_t>{3, 2}));
  EXPECT_FALSE(qwen->add_bos());
}

}  // namespace
}  // namespace clm
