// Token positions from real tokenizers: the TinyStories SentencePiece model
// (Chinese is byte-fallback there), the Phi-3 vocabulary, whose chat markers
// are special tokens, and GPT-2's byte-level BPE.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/utf8.h"
#include "support/test_paths.h"
#include "text/semantic_splitter.h"
#include "split_test_support.h"
#include "text/token_alignment.h"

namespace clm {
namespace {

using test::expect_tiling;
using test::texts_of;

struct Loaded {
  GgufFile file;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(const std::string& relative) {
  auto file = GgufFile::open(test::shared_file(relative));
  EXPECT_TRUE(file) << file.error().message;
  if (!file) return {};
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok) << tok.error().message;
  if (!tok) return {};
  return {std::move(*file), std::move(*tok)};
}

// Where each byte of `text` is the first byte of a UTF-8 character.
std::vector<bool> character_starts(std::string_view text) {
  std::vector<bool> starts(text.size() + 1, false);
  for (const CodePoint& c : utf8_decode(text)) starts[c.offset] = true;
  starts[text.size()] = true;
  return starts;
}

TEST(TokenAlignment, EnglishOnTheStoriesModel) {
  auto [file, tok] = load("models/stories260K.gguf");
  ASSERT_TRUE(tok);
  const std::string text = "Lily saw a big dog. Why was the dog sad? Please tell me a story about the dog.";
  const auto ids = tok->encode(text, /*add_special=*/true, /*parse_special=*/true);
  const auto offsets = align_tokens(*tok, ids, text);
  ASSERT_TRUE(offsets) << offsets.error().message;
  ASSERT_EQ(offsets->size(), ids.size());
  EXPECT_EQ(offsets->start(0), 0u);  // BOS covers no bytes
  EXPECT_EQ(offsets->start(1), 0u);  // "▁Lily" covers "Lily": the space prefix is not in the text

  const auto blocks = SemanticSplitter::with_default_rules().split(text, *offsets);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, *offsets);
  ASSERT_EQ(blocks->size(), 3u);
  EXPECT_EQ((*blocks)[0].type, BlockType::Context);
  EXPECT_EQ((*blocks)[1].type, BlockType::Question);
  EXPECT_EQ((*blocks)[2].type, BlockType::Instruction);
  EXPECT_EQ((*blocks)[0].tokens.begin, 0u);  // the BOS goes with the first block
  // Each block's tokens are exactly its bytes (the first one's space prefix aside).
  for (const SemanticBlock& b : *blocks) {
    std::string pieces;
    for (std::size_t t = b.tokens.begin; t < b.tokens.end; ++t) pieces += tok->token_to_piece(ids[t]);
    const std::string bytes = text.substr(b.bytes.begin, b.bytes.size());
    EXPECT_TRUE(pieces == bytes || pieces == " " + bytes) << "'" << pieces << "' vs '" << bytes << "'";
  }
  EXPECT_EQ(texts_of(*blocks, text, BlockType::Question), std::vector<std::string>{"Why was the dog sad? "});
}

TEST(TokenAlignment, ChineseByteFallbackTokensStillCoverWholeCharacters) {
  auto [file, tok] = load("models/stories260K.gguf");
  ASSERT_TRUE(tok);
  // Short lines: at one token per byte, a line of 22 characters is already
  // 64 tokens long, a document.
  const std::string text = "天空是蓝色的。\n天空为什么是蓝色的？请简要回答。\n\n第一步：找到狐狸。";
  const auto ids = tok->encode(text, true, true);
  EXPECT_GT(ids.size(), text.size() / 2);  // mostly one token per byte
  const auto offsets = align_tokens(*tok, ids, text);
  ASSERT_TRUE(offsets) << offsets.error().message;
  const auto blocks = SemanticSplitter::with_default_rules().split(text, *offsets);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, *offsets);
  const auto starts = character_starts(text);
  for (const SemanticBlock& b : *blocks) {
    EXPECT_TRUE(starts[b.bytes.begin] && starts[b.bytes.end]) << b.bytes.begin << ".." << b.bytes.end;
    const std::string bytes = text.substr(b.bytes.begin, b.bytes.size());
    std::size_t held = 0;
    EXPECT_EQ(utf8_sanitize(bytes, /*final=*/true, &held), bytes);  // well-formed on its own
  }
  EXPECT_EQ(texts_of(*blocks, text, BlockType::Question), std::vector<std::string>{"天空为什么是蓝色的？"});
  EXPECT_EQ(texts_of(*blocks, text, BlockType::Instruction), std::vector<std::string>{"请简要回答。\n\n"});
  EXPECT_EQ(texts_of(*blocks, text, BlockType::Step), std::vector<std::string>{"第一步：找到狐狸。"});
}

TEST(TokenAlignment, SpecialTokensOfAChatTemplate) {
  auto [file, tok] = load("testdata/tokenizer/ggml-vocab-phi-3.gguf");
  ASSERT_TRUE(tok);
  const std::string text = "<|user|>\nWhy is the sky blue?<|end|>\n<|assistant|>\n";
  const auto ids = tok->encode(text, true, true);
  ASSERT_TRUE(tok->find_token("<|user|>"));
  const auto offsets = align_tokens(*tok, ids, text);
  ASSERT_TRUE(offsets) << offsets.error().message;
  const auto blocks = SemanticSplitter::with_default_rules().split(text, *offsets);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, *offsets);
  EXPECT_EQ(test::typed_texts(*blocks, text),
            (std::vector<test::TypedText>{{"turn", "<|user|>\n"},
                                          {"question", "Why is the sky blue?"},
                                          {"turn", "<|end|>\n<|assistant|>\n"}}));
  // The question's first token is "Why": the marker's tokens end where it starts.
  EXPECT_EQ(tok->token_to_piece(ids[(*blocks)[1].tokens.begin]), "Why");
}

TEST(TokenAlignment, ByteLevelBpeTokens) {
  // GPT-2's byte-level BPE: a space belongs to the word after it, and a
  // Chinese character may be split across tokens.
  auto [file, tok] = load("testdata/tokenizer/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(tok);
  const std::string text = "天空为什么是蓝色的？请简要回答。\nWhy is the sky blue? Please answer.";
  const auto ids = tok->encode(text, true, true);
  const auto offsets = align_tokens(*tok, ids, text);
  ASSERT_TRUE(offsets) << offsets.error().message;
  const auto blocks = SemanticSplitter::with_default_rules().split(text, *offsets);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, *offsets);
  EXPECT_EQ(test::typed_texts(*blocks, text),
            (std::vector<test::TypedText>{{"question", "天空为什么是蓝色的？"},
                                          {"instruction", "请简要回答。\n"},
                                          {"question", "Why is the sky blue?"},
                                          {"instruction", " Please answer."}}));
}

TEST(TokenAlignment, SpelledTokensSplitLikeText) {
  auto [file, tok] = load("models/stories260K.gguf");
  ASSERT_TRUE(tok);
  const auto ids = tok->encode("The cat sat. Did the cat eat?", true, false);
  const SpelledTokens spelled = spell_tokens(*tok, ids);
  EXPECT_EQ(spelled.text, "<s> The cat sat. Did the cat eat?");  // BOS written out, the SPM space kept
  const auto blocks = SemanticSplitter::with_default_rules().split(spelled.text, spelled.offsets);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, spelled.text, spelled.offsets);
  EXPECT_EQ(test::typed_texts(*blocks, spelled.text),
            (std::vector<test::TypedText>{{"turn", "<s>"}, {"context", " The cat sat. "}, {"question", "Did the cat eat?"}}));
  EXPECT_EQ((*blocks)[0].tokens, (TokenRange{0, 1}));
}

TEST(TokenAlignment, MismatchedTokensAreRefused) {
  auto [file, tok] = load("models/stories260K.gguf");
  ASSERT_TRUE(tok);
  const auto ids = tok->encode("The cat sat.", true, false);
  auto wrong = align_tokens(*tok, ids, "The dog sat.");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("does not spell the text at byte"), std::string::npos) << wrong.error().message;
  auto short_text = align_tokens(*tok, ids, "The cat sat. More");
  ASSERT_FALSE(short_text);
  EXPECT_NE(short_text.error().message.find("spell only the first 12 of 17"), std::string::npos);
  const int32_t bad_id[] = {100000};
  EXPECT_FALSE(align_tokens(*tok, bad_id, "x"));
}

}  // namespace
}  // namespace clm
