// Runs a shell command and captures what it prints, for tests that drive the
// real clmcache executable.
#pragma once

#include <string>

namespace clm::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CommandResult run_command(const std::string& command);
// Single-quotes a string for the shell.
std::string shell_quote(const std::string& s);

}  // namespace clm::test
