// `clmcache split`: the real executable on the real model's tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

std::string split_command() {
  return shell_quote(test::cli_binary()) + " split -m " + shell_quote(test::shared_file("models/stories260K.gguf"));
}

std::string write_file(const std::string& name, const std::string& content) {
  const std::string path = test::temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

const std::string kPrompt =
    "<|im_start|>user\n[Context]:\nLily saw a big dog in the park.\n"
    "Why was the dog sad? Please answer in one sentence.\n1. Read the story.\n<|im_end|>\n";

TEST(CliSplit, JsonBlocksCoverThePromptTokensInOrder) {
  const auto r = run_command(split_command() + " --json -f " + shell_quote(write_file("p.txt", kPrompt)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  // As many tokens as `run` makes of the same prompt.
  const auto run = run_command(shell_quote(test::cli_binary()) + " run --json -n 0 -m " +
                               shell_quote(test::shared_file("models/stories260K.gguf")) + " -f " +
                               shell_quote(write_file("q.txt", kPrompt)));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(out["tokens"], nlohmann::json::parse(run.out)["prompt_token_ids"].size());
  EXPECT_EQ(out["min_block_length"], 8);

  std::vector<std::string> types;
  std::string joined;
  std::size_t token = 0;
  for (const auto& b : out["blocks"]) {
    types.push_back(b["type"]);
    joined += b["text"].get<std::string>();
    EXPECT_EQ(b["tokens"][0], token);
    token = b["tokens"][1];
    EXPECT_EQ(b["reusable"], token - b["tokens"][0].get<std::size_t>() >= 8);
  }
  EXPECT_EQ(token, out["tokens"]);
  EXPECT_EQ(joined, kPrompt);
  EXPECT_EQ(types, (std::vector<std::string>{"turn", "section", "context", "question", "instruction", "step",
                                             "turn"}));
}

TEST(CliSplit, TableShowsTypesRangesAndPreviews) {
  const auto r = run_command(split_command() + " -f " + shell_quote(write_file("p.txt", kPrompt)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("question"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"Why was the dog sad? \""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"<|im_start|>user\\n\""), std::string::npos) << r.out;  // line breaks escaped
  EXPECT_NE(r.out.find("7 blocks,"), std::string::npos) << r.out;
}

TEST(CliSplit, RuleFileReplacesTheDefaults) {
  const std::string rules = write_file("rules.json", R"({"min_block_length": 2, "rules": [
      {"pattern": "dog", "type": "document"}]})");
  const auto r = run_command(split_command() + " --json --split-rules " + shell_quote(rules) + " -f " +
                             shell_quote(write_file("p.txt", "A dog. Why?")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["min_block_length"], 2);
  std::vector<std::string> types;
  for (const auto& b : out["blocks"]) types.push_back(b["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"context", "document", "context"}));
}

TEST(CliSplit, BadInputGetsAMessageAndNonZeroExit) {
  const std::string prompt = shell_quote(write_file("p.txt", "Why?"));
  const std::string bad_rules = write_file("bad.json", R"({"rules": [{"pattern": "(", "type": "question"}]})");
  auto r = run_command(split_command() + " --split-rules " + shell_quote(bad_rules) + " -f " + prompt);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rule 0: bad pattern '(': missing )"), std::string::npos) << r.err;

  r = run_command(split_command() + " --split-rules " + shell_quote(write_file("j.json", "{oops")) + " -f " + prompt);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;

  r = run_command(split_command() + " -f " + shell_quote(test::temp_dir() + "/absent.txt"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("absent.txt"), std::string::npos) << r.err;

  r = run_command(shell_quote(test::cli_binary()) + " split -m " + shell_quote(write_file("x.gguf", "junk")) +
                  " -f " + prompt);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace clm
