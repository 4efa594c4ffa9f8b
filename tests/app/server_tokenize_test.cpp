// POST /tokenize and POST /detokenize on the real `clmcache serve`: the
// stories260K model (SentencePiece, byte fallback) for ids, pieces that are
// not whole characters, and errors; a synthetic qwen2 model (byte-level BPE
// with ChatML control tokens) for special-token text and the API key.
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

json post_json(httplib::Client& c, const std::string& path, const json& body, const httplib::Headers& headers = {}) {
  auto res = c.Post(path, headers, body.dump(), "application/json");
  EXPECT_TRUE(res) << "no response from " << path;
  if (!res) return {};
  EXPECT_EQ(res->status, 200) << path << " " << body.dump() << " -> " << res->body;
  return json::parse(res->body, nullptr, false);
}

void expect_error(const httplib::Result& res, int status, const std::string& code, const std::string& param) {
  ASSERT_TRUE(res) << "no response";
  EXPECT_EQ(res->status, status) << res->body;
  const json j = json::parse(res->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << res->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_EQ(j["error"]["code"], code) << res->body;
  if (param.empty()) {
    EXPECT_TRUE(j["error"]["param"].is_null()) << res->body;
  } else {
    EXPECT_EQ(j["error"]["param"], param) << res->body;
  }
}

TEST(ServerTokenize, SentencePieceIdsPiecesAndErrors) {
  std::ifstream in(test::shared_file("golden/stories260K.jsonl"));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const json golden = json::parse(line);
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "256"});
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());

  // The golden prompt ids start with BOS: add_special adds it, the default does not.
  const json want = golden["prompt_token_ids"];
  EXPECT_EQ(post_json(c, "/tokenize", {{"content", golden["prompt"]}, {"add_special", true}})["tokens"], want);
  json without_bos = want;
  without_bos.erase(0);
  EXPECT_EQ(post_json(c, "/tokenize", {{"content", golden["prompt"]}})["tokens"], without_bos);

  // The llama emoji is not in the 512-token vocabulary: four byte tokens,
  // each piece a quarter of a character, so given as byte values.
  const std::string llama = "\xF0\x9F\xA6\x99";
  const json pieces = post_json(c, "/tokenize", {{"content", "Once " + llama}, {"with_pieces", true}})["tokens"];
  ASSERT_TRUE(pieces.is_array());
  ASSERT_GE(pieces.size(), 5u);
  const std::size_t n = pieces.size();
  EXPECT_EQ(pieces[n - 4]["piece"], json::array({0xF0}));
  EXPECT_EQ(pieces[n - 3]["piece"], json::array({0x9F}));
  EXPECT_EQ(pieces[n - 2]["piece"], json::array({0xA6}));
  EXPECT_EQ(pieces[n - 1]["piece"], json::array({0x99}));
  EXPECT_EQ(pieces[0]["piece"], " Once");
  std::vector<int32_t> ids;
  for (const json& p : pieces) ids.push_back(p["id"].get<int32_t>());
  EXPECT_EQ(post_json(c, "/detokenize", {{"tokens", ids}})["content"], " Once " + llama);
  EXPECT_EQ(post_json(c, "/detokenize", {{"tokens", json::array()}})["content"], "");
  // BOS renders as its text, as llama.cpp's /detokenize does.
  EXPECT_EQ(post_json(c, "/detokenize", {{"tokens", want}})["content"], "<s> " + golden["prompt"].get<std::string>());

  expect_error(c.Post("/tokenize", "{nope", "application/json"), 400, "invalid_json", "");
  expect_error(c.Post("/tokenize", "[1]", "application/json"), 400, "invalid_json", "");
  expect_error(c.Post("/tokenize", json{{"text", "x"}}.dump(), "application/json"), 400, "missing_field", "content");
  expect_error(c.Post("/tokenize", json{{"content", 5}}.dump(), "application/json"), 400, "invalid_type", "content");
  expect_error(c.Post("/tokenize", json{{"content", "x"}, {"add_special", "yes"}}.dump(), "application/json"), 400,
               "invalid_type", "add_special");
  expect_error(c.Post("/tokenize", json{{"content", "x"}, {"with_pieces", 1}}.dump(), "application/json"), 400,
               "invalid_type", "with_pieces");
  expect_error(c.Post("/detokenize", "", "application/json"), 400, "invalid_json", "");
  expect_error(c.Post("/detokenize", json{{"content", "x"}}.dump(), "application/json"), 400, "missing_field",
               "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", 5}}.dump(), "application/json"), 400, "invalid_type", "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", {1, 512}}}.dump(), "application/json"), 400, "out_of_range",
               "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", {-1}}}.dump(), "application/json"), 400, "out_of_range",
               "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", {1, "2"}}}.dump(), "application/json"), 400, "invalid_type",
               "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", {1.5}}}.dump(), "application/json"), 400, "invalid_type",
               "tokens");
  expect_error(c.Post("/detokenize", json{{"tokens", {18446744073709551615ull}}}.dump(), "application/json"), 400,
               "out_of_range", "tokens");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerTokenize, SpecialTokenTextAndTheApiKey) {
  const std::string model = test::temp_dir() + "/qwen2.gguf";
  const auto made = test::run_command(test::shell_quote(test::cli_binary()) + " make-model --arch qwen2 -o " +
                                      test::shell_quote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  test::ServerProcess server({"-m", model, "-c", "256", "--api-key", "k3y"});
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  const std::string chat = "<|im_start|>user\nHello there<|im_end|>\n";
  const json body = {{"content", chat}};
  expect_error(c.Post("/tokenize", body.dump(), "application/json"), 401, "invalid_api_key", "");
  expect_error(c.Post("/detokenize", json{{"tokens", {1}}}.dump(), "application/json"), 401, "invalid_api_key", "");
  const httplib::Headers key = {{"Authorization", "Bearer k3y"}};

  // Special-token text is recognised unless parse_special is false.
  const json parsed = post_json(c, "/tokenize", body, key)["tokens"];
  const json start = post_json(c, "/tokenize", {{"content", "<|im_start|>"}}, key)["tokens"];
  ASSERT_EQ(start.size(), 1u);
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed[0], start[0]);
  const json literal = post_json(c, "/tokenize", {{"content", "<|im_start|>"}, {"parse_special", false}}, key)["tokens"];
  EXPECT_GT(literal.size(), 1u);

  // The pieces add up to the text, special tokens included, and
  // /detokenize gives the text back.
  const json pieces = post_json(c, "/tokenize", {{"content", chat}, {"with_pieces", true}}, key)["tokens"];
  ASSERT_EQ(pieces.size(), parsed.size());
  std::string joined;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i]["id"], parsed[i]);
    joined += pieces[i]["piece"].get<std::string>();
  }
  EXPECT_EQ(joined, chat);
  EXPECT_EQ(post_json(c, "/detokenize", {{"tokens", parsed}}, key)["content"], chat);
  EXPECT_EQ(post_json(c, "/detokenize", {{"tokens", literal}}, key)["content"], "<|im_start|>");
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
