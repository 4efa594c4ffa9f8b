// Reference tokenizations (llama.cpp's ggml-vocab-*.gguf vectors): every case
// of every supported vocabulary must match exactly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"
#include "support/vocab_vectors.h"

namespace clm {
namespace {

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class VocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, EveryCaseMatches) {
  const std::string base = std::string("testdata/tokenizer/ggml-vocab-") + GetParam() + ".gguf";
  auto file = GgufFile::open(test::shared_file(base));
  ASSERT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok) << tok.error().message;

  const auto cases = test::read_vocab_cases(test::shared_file(base + ".inp"));
  const auto expected = test::read_vocab_expected(test::shared_file(base + ".out"));
  // The reference file has one line per case; a trailing separator leaves a
  // final empty case with no line of its own.
  ASSERT_GE(cases.size(), 40u);
  ASSERT_GE(cases.size(), expected.size());
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> want = i < expected.size() ? expected[i] : std::vector<int32_t>{};
    const auto got = (*tok)->encode(cases[i], false, false);
    if (got != want) ++failures;
    EXPECT_EQ(got, want) << "case " << i << " text '" << cases[i] << "'\n got:  " << show(got)
                         << "\n want: " << show(want);
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
                                           "falcon", "mpt", "refact", "starcoder"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(VocabVectors, BertIsRefusedByName) {
  auto file = GgufFile::open(test::shared_file("testdata/tokenizer/ggml-vocab-bert-bge.gguf"));
  ASSERT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().message.find("bert"), std::string::npos) << tok.error().message;
}

}  // namespace
}  // namespace clm
