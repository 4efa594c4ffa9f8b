// llama.cpp's reference tokenizations of the Llama-3 (llama-bpe) and Qwen2
// vocabularies (ggml-vocab-*.gguf.inp/.out in the shared test data), run on
// models built from the real tokenizer.json files: every case must match.
// llama.cpp's vocab files themselves are not used; the vocabularies come
// from Hugging Face's tokenizer.json through make-model.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/reference/real_vocab.h"
#include "support/test_paths.h"

namespace clm {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cases are separated by a marker line; see the shared folder's README.
std::vector<std::string> split_cases(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (std::size_t pos = 0;;) {
    const std::size_t at = text.find(sep, pos);
    cases.push_back(text.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + sep.size();
  }
  return cases;
}

std::vector<std::vector<int32_t>> read_expected(const std::string& path) {
  std::vector<std::vector<int32_t>> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int64_t id = 0; ls >> id;) ids.push_back(static_cast<int32_t>(id));
    out.push_back(std::move(ids));
  }
  return out;
}

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
  const auto cases = split_cases(read_all(test::shared_file(base + ".inp")));
  const auto expected = read_expected(test::shared_file(base + ".out"));
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
