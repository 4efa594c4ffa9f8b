// Files named on the command line are read with a size bound checked first:
// a character device, a huge sparse file, a FIFO or a directory given as a
// prompt, template, context or cases file ends the command with a message
// and exit status 1, within seconds and under a 1 GiB address-space cap,
// never by SIGABRT from an allocation that failed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

// ASan reserves terabytes of address space, so the cap applies to the plain
// build only; the message and exit status are checked under both.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kMemoryCap = "";
#else
constexpr const char* kMemoryCap = "ulimit -v 1048576; ";
#endif

class CliFileBounds : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/clm-file-bounds-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sparse_ = (dir_ / "sparse").string();
    { std::ofstream(sparse_, std::ios::binary); }
    ASSERT_EQ(::truncate(sparse_.c_str(), off_t{2} << 30), 0);
    fifo_ = (dir_ / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    context_ = (dir_ / "context.json").string();
    std::ofstream(context_) << R"({"messages":[{"role":"user","content":"hi"}]})";
    template_ = (dir_ / "chat.jinja").string();
    std::ofstream(template_) << "{% for m in messages %}{{ m.content }}{% endfor %}";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Every hostile file in the place of `{}` in `args`.
  void expect_refused(const std::string& args) {
    for (const std::string& bad : {std::string("/dev/zero"), sparse_, fifo_, dir_.string()}) {
      std::string line = args;
      line.replace(line.find("{}"), 2, shell_quote(bad));
      const auto r = run_command(std::string(kMemoryCap) + "timeout 60 " + shell_quote(test::cli_binary()) + " " +
                                 line + " </dev/null");
      EXPECT_EQ(r.exit_code, 1) << line << "\n" << r.err;
      const bool told = r.err.find("is not a regular file") != std::string::npos ||
                        r.err.find("bytes; at most") != std::string::npos;
      EXPECT_TRUE(told) << line << "\n" << r.err;
    }
  }

  std::string model() const { return shell_quote(test::shared_file("models/stories260K.gguf")); }

  fs::path dir_;
  std::string sparse_, fifo_, context_, template_;
};

TEST_F(CliFileBounds, RunPromptFile) { expect_refused("run -m " + model() + " -n 1 -f {}"); }

TEST_F(CliFileBounds, TemplateFileAndContext) {
  expect_refused("template render --chat-template-file {} --context " + shell_quote(context_));
  expect_refused("template render --chat-template-file " + shell_quote(template_) + " --context {}");
}

TEST_F(CliFileBounds, ChatTemplateFile) { expect_refused("chat -m " + model() + " --chat-template-file {}"); }

TEST_F(CliFileBounds, EvalCasesFiles) {
  expect_refused("eval reuse -m " + model() + " --cases {}");
  expect_refused("eval evict -m " + model() + " --cases {}");
}

TEST_F(CliFileBounds, ATemplateOnStandardInputIsBoundedToo) {
  // 17 MiB of zeros on standard input: past the context's 16 MiB bound.
  const auto r = run_command(std::string(kMemoryCap) + "head -c 17825792 /dev/zero | timeout 60 " +
                             shell_quote(test::cli_binary()) + " template render --chat-template-file " +
                             shell_quote(template_) + " --context -");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("bytes; at most"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
