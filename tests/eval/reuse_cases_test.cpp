#include "reuse_cases.h"

#include <gtest/gtest.h>

#include <string>

namespace clm {
namespace {

// Expects a parse error whose message contains `needle`.
void expect_error(const std::string& text, const std::string& needle) {
  auto r = parse_reuse_cases(text);
  ASSERT_FALSE(r.has_value()) << text;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(ReuseCases, ParsesAllFields) {
  auto r = parse_reuse_cases(R"({"name": "n", "description": "d", "generator": "ignored",
    "cases": [{"id": "a", "warm": ["w1", "w2"], "ask": "q", "reference": " r", "note": "x", "extra": 1},
              {"id": "b", "warm": [], "ask": "q2"}]})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->name, "n");
  EXPECT_EQ(r->description, "d");
  ASSERT_EQ(r->cases.size(), 2u);
  EXPECT_EQ(r->cases[0].id, "a");
  EXPECT_EQ(r->cases[0].warm, (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(r->cases[0].ask, "q");
  EXPECT_EQ(r->cases[0].reference, " r");
  EXPECT_EQ(r->cases[0].note, "x");
  EXPECT_TRUE(r->cases[1].warm.empty());
  EXPECT_FALSE(r->cases[1].reference.has_value());
}

TEST(ReuseCases, RejectsBadFilesWithMessagesNamingTheCaseAndField) {
  expect_error("{", "not valid JSON");
  expect_error("[]", "top level must be an object");
  expect_error("{}", "missing 'cases'");
  expect_error(R"({"cases": {}})", "'cases' must be an array");
  expect_error(R"({"cases": []})", "'cases' is empty");
  expect_error(R"({"cases": [3]})", "case 0: must be an object");
  expect_error(R"({"cases": [{"warm": [], "ask": "q"}]})", "case 0: missing 'id'");
  expect_error(R"({"cases": [{"id": 7, "warm": [], "ask": "q"}]})", "'id' must be a non-empty string");
  expect_error(R"({"cases": [{"id": "a", "ask": "q"}]})", "case 0 (a): missing 'warm'");
  expect_error(R"({"cases": [{"id": "a", "warm": "w", "ask": "q"}]})", "'warm' must be an array");
  expect_error(R"({"cases": [{"id": "a", "warm": ["w", 1], "ask": "q"}]})", "'warm'[1] must be a string");
  expect_error(R"({"cases": [{"id": "a", "warm": []}]})", "case 0 (a): missing 'ask'");
  expect_error(R"({"cases": [{"id": "a", "warm": [], "ask": ["q"]}]})", "'ask' must be a string");
  expect_error(R"({"cases": [{"id": "a", "warm": [], "ask": ""}]})", "'ask' must not be empty");
  expect_error(R"({"cases": [{"id": "a", "warm": [], "ask": "q", "reference": 5}]})", "'reference' must be a string");
  expect_error(R"({"cases": [{"id": "a", "warm": [], "ask": "q", "note": false}]})", "'note' must be a string");
  expect_error(R"({"name": 1, "cases": [{"id": "a", "warm": [], "ask": "q"}]})", "'name' must be a string");
  expect_error(R"({"cases": [{"id": "a", "warm": [], "ask": "q"}, {"id": "a", "warm": [], "ask": "r"}]})",
               "case 1: duplicate id 'a'");
}

TEST(ReuseCases, LoadNamesTheFile) {
  auto r = load_reuse_cases("/nonexistent/cases.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("/nonexistent/cases.json"), std::string::npos);
}

}  // namespace
}  // namespace clm
