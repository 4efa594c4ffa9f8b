// Synthetic vocabularies: exact size, deterministic, readable back through
// GGUF metadata, and good enough that English text uses merged pieces.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer.h"

namespace clm {
namespace {

struct RoundTrip {
  std::vector<std::byte> bytes;  // the parsed file views into these
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

RoundTrip through_gguf(const SyntheticVocab& vocab) {
  RoundTrip rt;
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  add_vocab_metadata(w, vocab);
  rt.bytes = w.serialize();
  auto file = GgufFile::parse(rt.bytes);
  EXPECT_TRUE(file) << file.error().message;
  if (!file) return rt;
  rt.file = std::make_unique<GgufFile>(std::move(*file));
  auto tok = Tokenizer::from_gguf(*rt.file);
  EXPECT_TRUE(tok) << tok.error().message;
  if (tok) rt.tok = std::move(*tok);
  return rt;
}

const std::vector<std::string> kTexts = {
    "Once upon a time there was a little girl named Anna.",
    "The cat and the dog played in the garden, and the sun was warm.",
    "She asked her mother, \"Where is the boat?\"\nThey walked to the sea.",
    "Numbers 1234 and symbols #@! also work; so does caf\xC3\xA9 and \xF0\x9F\xA6\x99.",
};

class SyntheticVocabTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SyntheticVocabTest, BuildsExactSizesDeterministically) {
  for (int n : {kMinSyntheticVocab, 512, 1000, 4096}) {
    auto v = make_synthetic_vocab(GetParam(), n);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->model, GetParam());
    EXPECT_EQ(static_cast<int>(v->tokens.size()), n);
    EXPECT_EQ(v->types.size(), v->tokens.size());
    if (v->model == "llama") {
      EXPECT_EQ(v->scores.size(), v->tokens.size());
    }
    EXPECT_EQ(std::set<std::string>(v->tokens.begin(), v->tokens.end()).size(), v->tokens.size())
        << "token texts must be unique";
    auto again = make_synthetic_vocab(GetParam(), n);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->tokens, v->tokens);
    EXPECT_EQ(again->merges, v->merges);
  }
  // A large request is padded with unused tokens once the text runs out.
  auto big = make_synthetic_vocab(GetParam(), 4096);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->types.back(), static_cast<int32_t>(TokenType::Unused));
}

TEST_P(SyntheticVocabTest, RoundTripsThroughGgufAndText) {
  auto v = make_synthetic_vocab(GetParam(), 1024);
  ASSERT_TRUE(v) << v.error().message;
  auto rt = through_gguf(*v);
  ASSERT_NE(rt.tok, nullptr);
  EXPECT_EQ(rt.tok->n_vocab(), 1024);
  EXPECT_EQ(rt.tok->bos_id(), v->bos);
  EXPECT_EQ(rt.tok->eos_id(), v->eos);
  EXPECT_TRUE(rt.tok->is_end_of_generation(v->eos));
  for (const auto& text : kTexts) {
    const auto ids = rt.tok->encode(text, true, false);
    EXPECT_EQ(rt.tok->decode(ids), text);
    // Every text takes fewer tokens than bytes; English prose far fewer.
    EXPECT_LT(ids.size(), text.size()) << text;
    if (&text != &kTexts.back()) {
      EXPECT_LT(ids.size() * 2, text.size()) << text;
    }
    for (int32_t id : ids) EXPECT_NE(rt.tok->token_type(id), TokenType::Unused);
  }
}

TEST_P(SyntheticVocabTest, SmallestVocabStillEncodesEverything) {
  auto v = make_synthetic_vocab(GetParam(), kMinSyntheticVocab);
  ASSERT_TRUE(v);
  auto rt = through_gguf(*v);
  ASSERT_NE(rt.tok, nullptr);
  for (const auto& text : kTexts) EXPECT_EQ(rt.tok->decode(rt.tok->encode(text, true, false)), text);
}

INSTANTIATE_TEST_SUITE_P(Models, SyntheticVocabTest, ::testing::Values("llama", "gpt2"));

TEST(SyntheticVocab, Gpt2ChatSpecials) {
  auto v = make_synthetic_vocab("gpt2", 600);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pre, "qwen2");
  EXPECT_FALSE(v->merges.empty());
  auto rt = through_gguf(*v);
  ASSERT_NE(rt.tok, nullptr);
  EXPECT_FALSE(rt.tok->add_bos());
  const auto start = rt.tok->find_token("<|im_start|>");
  const auto end = rt.tok->find_token("<|im_end|>");
  ASSERT_TRUE(start && end);
  EXPECT_EQ(rt.tok->token_type(*start), TokenType::Control);
  const auto ids = rt.tok->encode("<|im_start|>user\nhi<|im_end|>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *start);
  EXPECT_EQ(ids.back(), *end);
  EXPECT_TRUE(rt.tok->is_end_of_generation(*end));
}

TEST(SyntheticVocab, LlamaLayout) {
  auto v = make_synthetic_vocab("llama", 512);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->tokens[0], "<unk>");
  EXPECT_EQ(v->tokens[1], "<s>");
  EXPECT_EQ(v->tokens[2], "</s>");
  EXPECT_EQ(v->tokens[3], "<0x00>");
  EXPECT_EQ(v->tokens[258], "<0xFF>");
  EXPECT_EQ(v->types[3], static_cast<int32_t>(TokenType::Byte));
  EXPECT_EQ(v->bos, 1);
  EXPECT_EQ(v->eos, 2);
  auto rt = through_gguf(*v);
  ASSERT_NE(rt.tok, nullptr);
  EXPECT_TRUE(rt.tok->add_bos());
  const auto ids = rt.tok->encode("the cat", true, false);
  ASSERT_EQ(ids.size(), 3u);  // <s>, "▁the", "▁cat": both words are learned pieces
  EXPECT_EQ(rt.tok->token_text(ids[1]), "\xE2\x96\x81the");
}

TEST(SyntheticVocab, RefusesBadRequests) {
  auto small = make_synthetic_vocab("llama", 100);
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message.find("100"), std::string::npos);
  auto bert = make_synthetic_vocab("bert", 1000);
  ASSERT_FALSE(bert);
  EXPECT_NE(bert.error().message.find("bert"), std::string::npos);
}

}  // namespace
}  // namespace clm
