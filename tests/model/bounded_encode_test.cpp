// Tokenizer::encode_bounded: within the bound, exactly encode's tokens (long
// texts cut into many chunks, for SentencePiece and every byte-level BPE
// pre-tokenizer with reference vectors); past it, a stop after a small prefix
// of the text.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"
#include "support/vocab_vectors.h"

namespace clm {
namespace {

constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

struct Loaded {
  GgufFile file;
  std::unique_ptr<Tokenizer> tok;
};

std::string model_path(const std::string& name) {
  return name == "stories260K" ? "models/stories260K.gguf" : "testdata/tokenizer/ggml-vocab-" + name + ".gguf";
}

Loaded load(const std::string& name) {
  auto file = GgufFile::open(test::shared_file(model_path(name)));
  EXPECT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok) << tok.error().message;
  return {std::move(*file), std::move(*tok)};
}

// llama.cpp's tokenizer cases (spaces, newlines, digits, contractions,
// scripts, emoji), shuffled and joined until the text spans many chunks, so
// the cuts fall in every kind of place.
std::string long_text(unsigned seed, std::size_t min_bytes) {
  auto cases = test::read_vocab_cases(test::shared_file("testdata/tokenizer/ggml-vocab-gpt-2.gguf.inp"));
  EXPECT_GE(cases.size(), 40u);
  std::mt19937 rng(seed);
  const std::vector<std::string> separators = {"", " ", "\n", "  ", "\n\n", " 123", "'ll "};
  std::string text;
  while (text.size() < min_bytes) {
    std::shuffle(cases.begin(), cases.end(), rng);
    for (const std::string& c : cases) text += c + separators[rng() % separators.size()];
  }
  return text;
}

std::string words(std::size_t min_bytes) {
  const std::vector<std::string> pool = {"the", "little", "dog", "ran", "to", "Lily,", "and", "sun."};
  std::string text;
  for (std::size_t i = 0; text.size() < min_bytes; ++i) text += pool[(i * 7 + i / 3) % pool.size()] + " ";
  return text;
}

class BoundedEncode : public ::testing::TestWithParam<const char*> {};

TEST_P(BoundedEncode, SameTokensAsEncodeWithinTheBound) {
  auto [file, tok] = load(GetParam());
  ASSERT_TRUE(tok);
  for (unsigned seed : {1u, 2u, 3u}) {
    const std::string text = long_text(seed, 48 * 1024);
    const std::vector<int32_t> full = tok->encode(text, /*add_special=*/true, /*parse_special=*/false);
    ASSERT_GT(full.size(), 1000u);

    const BoundedTokens all = tok->encode_bounded(text, true, false, kUnbounded);
    EXPECT_FALSE(all.exceeded);
    EXPECT_EQ(all.bytes_read, text.size());
    EXPECT_EQ(all.tokens, full) << "seed " << seed;

    const BoundedTokens exact = tok->encode_bounded(text, true, false, full.size());
    EXPECT_FALSE(exact.exceeded);
    EXPECT_EQ(exact.tokens, full);

    const BoundedTokens one_short = tok->encode_bounded(text, true, false, full.size() - 1);
    EXPECT_TRUE(one_short.exceeded);
  }
}

TEST_P(BoundedEncode, SpecialTokensAndLiteralRangesAsEncode) {
  auto [file, tok] = load(GetParam());
  ASSERT_TRUE(tok);
  // A control token's text between long texts: parsed, and kept as text
  // where a literal range covers it.
  std::string eos_text(tok->token_text(tok->eos_id() >= 0 ? tok->eos_id() : 0));
  const std::string a = long_text(4, 9000);
  const std::string b = long_text(5, 9000);
  PromptText prompt = PromptText::parsed(a + eos_text + b + eos_text);
  prompt.literal.push_back({a.size() + eos_text.size() + b.size(), prompt.text.size()});
  const std::vector<int32_t> full = tok->encode(prompt, true);
  const BoundedTokens bounded = tok->encode_bounded(prompt, true, kUnbounded);
  EXPECT_FALSE(bounded.exceeded);
  EXPECT_EQ(bounded.tokens, full);
  EXPECT_EQ(tok->encode_bounded(prompt, true, full.size()).tokens, full);

  const std::vector<int32_t> parsed = tok->encode(prompt.text, true, true);
  EXPECT_EQ(tok->encode_bounded(prompt.text, true, true, kUnbounded).tokens, parsed);
}

TEST_P(BoundedEncode, StopsAfterASmallPrefixPastTheBound) {
  auto [file, tok] = load(GetParam());
  ASSERT_TRUE(tok);
  const std::string text = words(2 << 20);
  const std::size_t max_tokens = 512;
  const BoundedTokens r = tok->encode_bounded(text, true, false, max_tokens);
  EXPECT_TRUE(r.exceeded);
  EXPECT_GT(r.tokens.size(), max_tokens);
  // A few chunks of about 4 KiB, not 2 MiB.
  EXPECT_LT(r.bytes_read, 64u * 1024) << "read " << r.bytes_read << " of " << text.size() << " bytes";
  EXPECT_GT(r.bytes_read, 0u);
  // What it produced is the start of the full encoding (a 256 KiB prefix
  // encodes the same up there).
  const std::vector<int32_t> head = tok->encode(std::string_view(text).substr(0, 256 * 1024), true, false);
  ASSERT_GT(head.size(), r.tokens.size());
  EXPECT_EQ(r.tokens, std::vector<int32_t>(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(r.tokens.size())));
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BoundedEncode,
                         ::testing::Values("stories260K", "llama-spm", "phi-3", "gpt-2", "deepseek-coder",
                                           "deepseek-llm", "falcon", "mpt", "refact", "starcoder"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace clm
