// The committed recall cases of `eval evict` (eval/cases/long_recall.json)
// were placed with scripts/make-evict-cases.py's own count of tokens; this
// checks them against the engine's tokenizer of the real model: each case's
// answer begins at the recorded token, inside the 12 teacher-forced tokens
// after a 500-token prompt, within the model's context, and the fact is
// stated once near the start and never repeated before it is asked for.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "evict_cases.h"
#include "model/model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

constexpr int kPromptTokens = 500;
constexpr int kContinuationTokens = 12;

std::string recall_path() { return std::string(CLMCACHE_EVAL_TEST_DATA) + "/../../../eval/cases/long_recall.json"; }

std::size_t occurrences_as_word(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    n += end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
  }
  return n;
}

TEST(EvictRecallCases, EachAnswerStartsInsideTheContinuationAndDependsOnTheStart) {
  std::ifstream in(recall_path());
  ASSERT_TRUE(in) << recall_path();
  std::stringstream buf;
  buf << in.rdbuf();
  ASSERT_TRUE(parse_evict_cases(buf.str()));  // the evaluation reads it
  const auto doc = nlohmann::json::parse(buf.str());
  ASSERT_EQ(doc.at("cases").size(), 80u);

  auto model = Model::load(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(model) << model.error().message;
  const Tokenizer& tok = (*model)->tokenizer();
  const int n_ctx = (*model)->config().n_ctx_train;
  ASSERT_GE(n_ctx, kPromptTokens + kContinuationTokens);
  for (const auto& c : doc.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    SCOPED_TRACE(id);
    const std::string text = c.at("text").get<std::string>();
    const std::string answer = c.at("answer").get<std::string>();
    const int at = c.at("answer_token").get<int>();
    EXPECT_GT(at, kPromptTokens) << "the answer must follow some teacher-forced context";
    EXPECT_LT(at, kPromptTokens + kContinuationTokens);
    const auto ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
    ASSERT_GE(static_cast<int>(ids.size()), kPromptTokens + kContinuationTokens);
    std::string from_answer;
    for (std::size_t i = static_cast<std::size_t>(at); i < ids.size() && from_answer.size() < answer.size(); ++i)
      from_answer += tok.token_to_piece(ids[i]);
    EXPECT_EQ(from_answer.substr(0, answer.size()), answer);
    // Stated in the first line, asked for at the end, nowhere in between.
    EXPECT_NE(text.substr(0, text.find('\n')).find(answer), std::string::npos);
    EXPECT_EQ(occurrences_as_word(text, answer), 2u);
  }
}

}  // namespace
}  // namespace clm
