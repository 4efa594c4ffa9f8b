// Rule files: what they set, and a clear error naming the rule for each
// kind of mistake.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/test_paths.h"
#include "text/default_split_rules.h"
#include "text/split_rules_file.h"
#include "split_test_support.h"

namespace clm {
namespace {

using test::split_chars;
using test::typed_texts;
using test::TypedText;
using Expect = std::vector<TypedText>;

std::string error_of(std::string_view json) {
  auto splitter = parse_split_rules(json);
  EXPECT_FALSE(splitter) << json;
  return splitter ? std::string() : splitter.error().message;
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(SplitRulesFile, RulesReplaceTheDefaultsAndSetMinBlockLength) {
  auto splitter = parse_split_rules(R"({"min_block_length": 3, "rules": [
      {"pattern": "TODO[^\\n]*", "type": "instruction"},
      {"pattern": "(?m)^#+ .*", "type": "section", "min_length": 2}]})");
  ASSERT_TRUE(splitter) << splitter.error().message;
  EXPECT_EQ(splitter->options().min_block_length, 3u);
  ASSERT_EQ(splitter->rules().size(), 2u);
  EXPECT_EQ(splitter->rules()[1].min_length, 2u);
  const std::string text = "# Title\nWhy? TODO fix";
  EXPECT_EQ(typed_texts(split_chars(*splitter, text), text),
            (Expect{{"section", "# Title\n"}, {"context", "Why? "}, {"instruction", "TODO fix"}}));
}

TEST(SplitRulesFile, DefaultRulesFollowTheFilesWhenAsked) {
  auto splitter = parse_split_rules(R"({"default_rules": true, "rules": [{"pattern": "Why\\?", "type": "step"}]})");
  ASSERT_TRUE(splitter) << splitter.error().message;
  EXPECT_EQ(splitter->rules().size(), default_split_rules().size() + 1);
  EXPECT_EQ(splitter->options().min_block_length, SplitterOptions{}.min_block_length);
  const std::string text = "Why? How?";
  EXPECT_EQ(typed_texts(split_chars(*splitter, text), text), (Expect{{"step", "Why? "}, {"question", "How?"}}));
}

TEST(SplitRulesFile, EmptyRuleListIsAllowed) {
  auto splitter = parse_split_rules(R"({"rules": []})");
  ASSERT_TRUE(splitter);
  EXPECT_TRUE(splitter->rules().empty());
}

TEST(SplitRulesFile, ClearErrors) {
  EXPECT_HAS(error_of("{\"rules\": [}"), "not valid JSON");
  EXPECT_HAS(error_of(""), "not valid JSON");
  EXPECT_HAS(error_of("[]"), "expected a JSON object");
  EXPECT_HAS(error_of("{}"), "\"rules\" must be an array");
  EXPECT_HAS(error_of(R"({"rules": [], "min_block": 3})"), "unknown key \"min_block\"");
  EXPECT_HAS(error_of(R"({"rules": [], "min_block_length": -1})"), "\"min_block_length\" must be an integer");
  EXPECT_HAS(error_of(R"({"rules": [], "min_block_length": "8"})"), "\"min_block_length\" must be an integer");
  EXPECT_HAS(error_of(R"({"rules": [], "default_rules": 1})"), "\"default_rules\" must be true or false");

  const std::string ok = R"({"pattern": "a", "type": "step"}, )";
  EXPECT_HAS(error_of(R"({"rules": [)" + ok + R"("a"]})"), "rule 1: expected an object");
  EXPECT_HAS(error_of(R"({"rules": [)" + ok + R"({"type": "step"}]})"), "rule 1: \"pattern\" must be a string");
  EXPECT_HAS(error_of(R"({"rules": [{"pattern": "a"}]})"), "rule 0: \"type\" must be a string");
  const std::string unknown = error_of(R"({"rules": [)" + ok + ok + R"({"pattern": "a", "type": "poem"}]})");
  EXPECT_HAS(unknown, "rule 2: unknown type \"poem\"");
  EXPECT_HAS(unknown, "question, instruction, step, section, turn, document, context");
  const std::string regex = error_of(R"({"rules": [)" + ok + R"({"pattern": "(a", "type": "step"}]})");
  EXPECT_HAS(regex, "rule 1: bad pattern '(a': missing )");
  EXPECT_HAS(error_of(R"({"rules": [{"pattern": "a", "type": "step", "min_len": 2}]})"),
             "rule 0: unknown key \"min_len\"");
  EXPECT_HAS(error_of(R"({"rules": [{"pattern": "a", "type": "step", "min_length": 1.5}]})"),
             "rule 0: \"min_length\" must be an integer");
}

// Found by fuzz_split_rules: a number too large for a double made the JSON
// library throw out_of_range (not parse_error), which escaped as an abort.
TEST(SplitRulesFile, NumberOverflowIsAnError) {
  EXPECT_HAS(error_of("61e+881"), "not valid JSON");
  EXPECT_HAS(error_of(R"({"rules": [], "min_block_length": 1e999})"), "not valid JSON");
}

TEST(SplitRulesFile, LoadNamesTheFile) {
  const std::string dir = test::temp_dir();
  const std::string path = dir + "/rules.json";
  std::ofstream(path) << R"({"rules": [{"pattern": "a", "type": "nope"}]})";
  auto bad = load_split_rules(path);
  ASSERT_FALSE(bad);
  EXPECT_HAS(bad.error().message, "split rules " + path + ": rule 0: unknown type");

  auto missing = load_split_rules(dir + "/absent.json");
  ASSERT_FALSE(missing);
  EXPECT_HAS(missing.error().message, "cannot open split rules file " + dir + "/absent.json");

  const std::string big = dir + "/big.json";
  std::ofstream(big) << std::string(kMaxRuleFileBytes + 1, ' ');
  auto too_big = load_split_rules(big);
  ASSERT_FALSE(too_big);
  EXPECT_HAS(too_big.error().message, "at most");

  std::ofstream(path) << R"({"rules": [{"pattern": "a+", "type": "step"}]})";
  auto good = load_split_rules(path);
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->rules().size(), 1u);
}

}  // namespace
}  // namespace clm
