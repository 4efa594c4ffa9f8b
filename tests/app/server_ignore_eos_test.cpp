// `ignore_eos` through the real server: a synthetic model with a vocabulary
// of 300 tokens, sampled at a high temperature, meets its end token within a
// few hundred tokens, so the same seeded request that stops early without
// the field must run to max_tokens with it (benchmarks rely on that to get
// exactly max_tokens from every request).
#include <gtest/gtest.h>

#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

constexpr int kMaxTokens = 400;

std::string small_vocabulary_model() {
  const std::string path = test::temp_dir() + "/ignore-eos-v300.gguf";
  const auto made = test::run_command(test::shell_quote(test::cli_binary()) + " make-model --vocab 300 -o " +
                                      test::shell_quote(path));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return path;
}

json complete(int port, json body) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60);
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return {};
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body, nullptr, false);
}

TEST(ServerIgnoreEos, GeneratesPastTheEndTokenToMaxTokens) {
  test::ServerProcess server({"-m", small_vocabulary_model(), "-c", "512"});
  ASSERT_GT(server.port(), 0);
  // Several seeds, so that the test does not hang on one seed's luck; each
  // one that meets the end token early must run on with ignore_eos.
  int stopped_early = 0;
  for (int seed = 1; seed <= 4; ++seed) {
    json body = {{"prompt", {1, 50, 60}}, {"max_tokens", kMaxTokens}, {"temperature", 1.5}, {"seed", seed}};
    const json plain = complete(server.port(), body);
    if (plain["choices"][0]["finish_reason"] != "stop") continue;
    ++stopped_early;
    EXPECT_LT(plain["usage"]["completion_tokens"].get<int>(), kMaxTokens);
    body["ignore_eos"] = true;
    const json ignoring = complete(server.port(), body);
    EXPECT_EQ(ignoring["choices"][0]["finish_reason"], "length") << "seed " << seed;
    EXPECT_EQ(ignoring["usage"]["completion_tokens"], kMaxTokens) << "seed " << seed;
  }
  EXPECT_GT(stopped_early, 0) << "no request met the end token: the test shows nothing";
}

}  // namespace
}  // namespace clm
