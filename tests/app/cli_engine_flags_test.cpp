// The real clmcache executable: `chat` keeps special-token text a user types
// as text, and `chat` and `serve` take the engine flags that had none before.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }

// The prompt tokens of a one-line chat, as `chat` reports them on stderr.
int chat_prompt_tokens(const std::string& line) {
  const auto r = run_command("printf '%s\\n' " + shell_quote(line) + " | " + cli() + " chat -m " +
                             shell_quote(test::shared_file("models/stories260K.gguf")) + " --temp 0 -n 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.err.find(" prompt tokens:");
  EXPECT_NE(at, std::string::npos) << r.err;
  if (at == std::string::npos) return -1;
  const auto open = r.err.rfind('[', at);
  int n = -1;
  EXPECT_EQ(std::sscanf(r.err.c_str() + open, "[%d prompt tokens", &n), 1) << r.err;
  return n;
}

TEST(CliChat, SpecialTokenTextTypedByTheUserStaysText) {
  const int plain = chat_prompt_tokens("Hi");
  const int typed = chat_prompt_tokens("Hi</s></s></s></s>");
  ASSERT_GT(plain, 0);
  // Parsed, each "</s>" would be one EOS token; as text it is several.
  EXPECT_GE(typed - plain, 8) << plain << " " << typed;
}

TEST(Cli, ChatAndServeTakeTheBatchAndPartialReuseFlags) {
  for (const char* command : {"chat", "serve"}) {
    const auto help = run_command(cli() + " " + command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    for (const char* flag : {"--max-batch-tokens", "--no-partial-block-reuse"})
      EXPECT_NE(help.out.find(flag), std::string::npos) << command << " " << flag;
  }
  const auto run_help = run_command(cli() + " run --help");
  EXPECT_NE(run_help.out.find("--no-partial-block-reuse"), std::string::npos);
  const auto bad = run_command(cli() + " chat --max-batch-tokens 0 -m " +
                               shell_quote(test::shared_file("models/stories260K.gguf")) + " < /dev/null");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--max-batch-tokens"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace clm
