// llama.cpp's reference tokenizations of the Llama-3 (llama-bpe) and Qwen2
// vocabularies (ggml-vocab-*.gguf.inp/.out in the shared test data), run on
// models built from the real tokenizer.json files: every case must match.
// llama.cpp's vocab files themselves are not used; the vocabularies come
// from Hugging Face's tokenizer.json through make-model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/reference/real_vocab.h"
#include "support/test_paths.h"
#include "support/vocab_vectors.h"

namespace clm {
namespace {

struct VectorSet {
  const char* family;  // the npm vocabulary
  const char* vectors;  // llama.cpp's file name part
};

void PrintTo(const VectorSet& set, std::ostream* os) { *os << set.family << " / " << set.vectors; }

class LlamaCppVectors : public ::testing::TestWithParam<VectorSet> {};

TEST_P(LlamaCppVectors, EveryCaseMatches) {
  const test::RealVocab* vocab = test::real_vocab(GetParam().family);
  ASSERT_NE(vocab, nullptr);
  const std::string base = std::string("testdata/tokenizer/ggml-vocab-") + GetParam().vectors + ".gguf";
  const auto cases = test::read_vocab_cases(test::shared_file(base + ".inp"));
  const auto expected = test::read_vocab_expected(test::shared_file(base + ".out"));
  // One line per case; a trailing separator leaves a last empty case.
  ASSERT_GE(cases.size(), 40u);
  ASSERT_GE(cases.size(), expected.size());
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> want = i < expected.size() ? expected[i] : std::vector<int32_t>{};
    const auto got = vocab->tokenizer->encode(cases[i], false, false);
    if (got == want) continue;
    ++failures;
    ADD_FAILURE() << "case " << i << " '" << test::show_text(cases[i]) << "'\n got:  " << test::show_ids(got)
                  << "\n want: " << test::show_ids(want);
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " cases";
}

INSTANTIATE_TEST_SUITE_P(RealVocabs, LlamaCppVectors,
                         ::testing::Values(VectorSet{"llama3", "llama-bpe"}, VectorSet{"qwen3", "qwen2"}),
                         [](const ::testing::TestParamInfo<VectorSet>& param_info) {
                           return std::string(param_info.param.family);
                         });

}  // namespace
}  // namespace clm
