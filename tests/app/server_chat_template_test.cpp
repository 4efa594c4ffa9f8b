// `clmcache serve` with a Jinja chat template: the template renders chat
// requests (one BOS, whatever the template writes), a template's refusal is
// a 400 that says why, and the models route names the format.
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

// Writes bos_token itself and refuses system messages, like Gemma's.
const char* kTemplate =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

std::string template_file() {
  const std::string path = test::temp_dir() + "/chat.jinja";
  std::ofstream(path, std::ios::binary) << kTemplate;
  return path;
}

httplib::Result post(httplib::Client& c, const std::string& path, const json& body) {
  return c.Post(path, body.dump(), "application/json");
}

TEST(ServerChatTemplate, RendersWithTheTemplateAndReportsRefusals) {
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "512",
                              "--chat-template-file", template_file()});
  ASSERT_GT(server.port(), 0) << server.log();
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);

  const auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["meta"]["chat_format"], "jinja");

  // The chat prompt is the template's text with the tokenizer's single BOS:
  // as many tokens as that text sent as a completion prompt.
  const auto chat = post(c, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "  Tell me a story.  "}}}}, {"max_tokens", 1}});
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  const auto completion =
      post(c, "/v1/completions", {{"prompt", "<user>Tell me a story.</user>\n<assistant>"}, {"max_tokens", 1}});
  ASSERT_TRUE(completion);
  ASSERT_EQ(completion->status, 200) << completion->body;
  EXPECT_EQ(json::parse(chat->body)["usage"]["prompt_tokens"], json::parse(completion->body)["usage"]["prompt_tokens"]);

  const auto refused = post(c, "/v1/chat/completions",
                            {{"messages", {{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}}}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  const json error = json::parse(refused->body)["error"];
  EXPECT_EQ(error["param"], "messages");
  EXPECT_EQ(error["code"], "invalid_value");
  EXPECT_NE(error["message"].get<std::string>().find("System role not supported"), std::string::npos) << error;

  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
