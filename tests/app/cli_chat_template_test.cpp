// Chat templates through the real executable: `clmcache template render`
// prints exactly what a template writes, and chat takes a template file,
// requires one for --chat-format jinja, and reports a template's refusal.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }
std::string stories() { return shell_quote(test::shared_file("models/stories260K.gguf")); }

// Writes `text` to a file in a fresh temporary directory; returns its quoted path.
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = test::temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return shell_quote(path);
}

// Writes bos_token itself and refuses system messages, like Gemma's.
const char* kTemplate =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

TEST(CliTemplateRender, PrintsExactlyWhatTheTemplateWrites) {
  const std::string tmpl = temp_file("t.jinja", kTemplate);
  const std::string context = temp_file(
      "c.json", R"({"messages": [{"role": "user", "content": " Grüße 🎉 "}], "add_generation_prompt": true,
                   "bos_token": "[BOS]"})");
  const auto r = run_command(cli() + " template render --chat-template-file " + tmpl + " --context " + context);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[BOS]<user>Grüße 🎉</user>\n<assistant>");

  // The context can come on standard input; a model supplies bos_token and eos_token.
  const auto with_model = run_command("echo '{\"messages\": []}' | " + cli() + " template render -m " + stories() +
                                      " --chat-template-file " + temp_file("b.jinja", "{{ bos_token }}|{{ eos_token }}"));
  ASSERT_EQ(with_model.exit_code, 0) << with_model.err;
  EXPECT_EQ(with_model.out, "<s>|</s>");
}

TEST(CliTemplateRender, BatchRendersOneJsonLinePerContext) {
  const std::string tmpl = temp_file("t.jinja", kTemplate);
  const std::string contexts = temp_file(
      "c.jsonl", R"({"messages": [{"role": "user", "content": "a"}], "bos_token": ""}
{"messages": [{"role": "system", "content": "b"}]}

{"messages": [{"role": "user", "content": "ü\n"}], "add_generation_prompt": true, "bos_token": ""}
)");
  const auto r = run_command(cli() + " template render --batch --chat-template-file " + tmpl + " --context " + contexts);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"text\":\"<user>a</user>\\n\"}\n"
            "{\"error\":\"chat template: line 1, column 59: the template raised an error: System role not supported\"}\n"
            "{\"text\":\"<user>ü</user>\\n<assistant>\"}\n");
}

TEST(CliTemplateRender, ErrorsAreReported) {
  const std::string tmpl = temp_file("t.jinja", kTemplate);
  const auto refused = run_command("echo '{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}' | " + cli() +
                                   " template render --chat-template-file " + tmpl);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("line 1, column 59: the template raised an error: System role not supported"),
            std::string::npos)
      << refused.err;
  const auto bad_json = run_command("echo '{oops' | " + cli() + " template render --chat-template-file " + tmpl);
  EXPECT_EQ(bad_json.exit_code, 1);
  EXPECT_NE(bad_json.err.find("not valid JSON"), std::string::npos) << bad_json.err;
  const auto bad_template = run_command("echo '{}' | " + cli() + " template render --chat-template-file " +
                                        temp_file("bad.jinja", "ok\n{% for %}"));
  EXPECT_EQ(bad_template.exit_code, 1);
  EXPECT_NE(bad_template.err.find("line 2, column 8"), std::string::npos) << bad_template.err;
  const auto no_template = run_command("echo '{}' | " + cli() + " template render -m " + stories());
  EXPECT_EQ(no_template.exit_code, 1);
  EXPECT_NE(no_template.err.find("no chat template"), std::string::npos) << no_template.err;
}

TEST(CliChat, UsesAGivenTemplateAndReportsItsRefusals) {
  const std::string tmpl = temp_file("t.jinja", kTemplate);
  const auto r = run_command("printf 'Hello there\\n' | " + cli() + " chat -m " + stories() +
                             " --temp 0 -n 4 --chat-template-file " + tmpl);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chat format: jinja"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" reused from the cache"), std::string::npos) << r.err;

  const auto refused = run_command("printf 'Hello\\n' | " + cli() + " chat -m " + stories() +
                                   " -n 4 --system 'Be nice.' --chat-template-file " + tmpl);
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_NE(refused.err.find("System role not supported"), std::string::npos) << refused.err;
}

TEST(CliChat, JinjaNeedsATemplateAndFormatsExcludeTemplateFiles) {
  const auto none = run_command("echo hi | " + cli() + " chat -m " + stories() + " --chat-format jinja");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no chat template"), std::string::npos) << none.err;
  const auto both = run_command("echo hi | " + cli() + " chat -m " + stories() + " --chat-format llama3 " +
                                "--chat-template-file " + temp_file("t.jinja", kTemplate));
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("cannot be combined"), std::string::npos) << both.err;
  const auto missing = run_command("echo hi | " + cli() + " chat -m " + stories() + " --chat-template-file /nonexistent");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot open template file /nonexistent"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace clm
