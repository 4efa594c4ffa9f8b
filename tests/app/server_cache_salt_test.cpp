// Tenants apart: requests with different `cache_salt` values, or with
// different API keys under --namespace-per-api-key, share no cached K/V in
// RAM or on disk, whatever the reuse mode; a probe by one cannot learn a
// token of another's prompt from cached_tokens. Within one namespace reuse
// works as before, and a salted request's output equals a cold run's.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

// Texts no other test sends.
const char* kSecret =
    "The keeper of the lighthouse wrote the code on a card: seven three nine one. "
    "Then she hid the card under the blue stone by the door and went to sleep.";

std::vector<std::string> model_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512",
                                   "--block-size", "16"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct Reply {
  int status = 0;
  json body;
};

Reply post(int port, json body, const std::string& key = "") {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  body["temperature"] = 0;
  auto res = c.Post("/v1/completions", headers, body.dump(), "application/json");
  if (!res) return {};
  return {res->status, json::parse(res->body, nullptr, false)};
}

int cached_of(const Reply& r) { return r.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(); }

json completion(const std::string& prompt, const std::string& salt = "") {
  json b = {{"prompt", prompt}, {"max_tokens", 8}};
  if (!salt.empty()) b["cache_salt"] = salt;
  return b;
}

TEST(ServerCacheSalt, DifferentSaltsShareNothingAndTheSameSaltReuses) {
  test::ServerProcess server(model_args());
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const Reply cold = post(port, completion(kSecret));  // namespace 0: warm for the unsalted
  ASSERT_EQ(cold.status, 200) << cold.body;
  const Reply a1 = post(port, completion(kSecret, "tenant-a"));
  ASSERT_EQ(a1.status, 200) << a1.body;
  EXPECT_EQ(cached_of(a1), 0) << "a salted request found the unsalted one's blocks";
  const Reply b1 = post(port, completion(kSecret, "tenant-b"));
  EXPECT_EQ(cached_of(b1), 0) << "tenant-b found tenant-a's blocks";
  const Reply a2 = post(port, completion(kSecret, "tenant-a"));
  EXPECT_GT(cached_of(a2), 16) << a2.body;
  // The prefix promise holds within a namespace: same text, bit for bit.
  EXPECT_EQ(a1.body["choices"][0]["text"], cold.body["choices"][0]["text"]);
  EXPECT_EQ(a2.body["choices"][0]["text"], cold.body["choices"][0]["text"]);
  // The dashboard draws salted requests without their text.
  httplib::Client c("127.0.0.1", port);
  const json dash = json::parse(c.Get("/dashboard/data")->body);
  ASSERT_EQ(dash["requests"].size(), 4u) << dash["requests"].dump();
  int with_text = 0;
  for (const json& r : dash["requests"]) with_text += r["token_text"].empty() ? 0 : 1;
  EXPECT_EQ(with_text, 1) << "only the unsalted request shows its text";
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerCacheSalt, AProbeWithAnotherSaltLearnsNoTokenInAnyReuseMode) {
  for (const char* mode : {"prefix", "shift", "blend"}) {
    test::ServerProcess server(model_args({"--reuse", mode}));
    ASSERT_GT(server.port(), 0);
    const int port = server.port();
    ASSERT_EQ(post(port, completion(kSecret, "victim")).status, 200);
    const std::string secret = kSecret;
    // The victim's own namespace finds its span after a new preamble (asked
    // before the probes, whose blocks may evict the victim's from this
    // small pool).
    if (std::string(mode) != "prefix") {
      const Reply own = post(port, completion("Once upon a time. " + secret, "victim"));
      EXPECT_GT(own.body["usage"]["prompt_tokens_details"]["reuse"]["shift"].get<int>(), 0) << mode << own.body;
    }
    // The attacker sends growing prefixes of the secret, and the secret after
    // a preamble of its own (where shift and blend look for spans), each
    // probe with a salt of its own so that it cannot hit its own earlier
    // probes: whatever is cached for it could only be the victim's.
    int learned = 0;
    int probe = 0;
    for (std::size_t cut = 20; cut <= secret.size(); cut += 20) {
      const Reply p = post(port, completion(secret.substr(0, cut), "attacker-" + std::to_string(++probe)));
      ASSERT_EQ(p.status, 200) << p.body;
      learned += cached_of(p);
    }
    const Reply shifted = post(port, completion("A story of mine. " + secret, "attacker-last"));
    learned += cached_of(shifted);
    const json& reuse = shifted.body["usage"]["prompt_tokens_details"]["reuse"];
    EXPECT_EQ(reuse["shift"], 0) << mode << " " << shifted.body;
    EXPECT_EQ(learned, 0) << mode;
    EXPECT_EQ(server.terminate(30), 0) << server.log();
  }
}

TEST(ServerCacheSalt, EachApiKeyHasItsOwnNamespace) {
  test::ServerProcess server(model_args({"--api-key", "key-one", "--api-key", "key-two", "--namespace-per-api-key"}));
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  EXPECT_EQ(post(port, completion(kSecret), "key-three").status, 401);
  ASSERT_EQ(post(port, completion(kSecret), "key-one").status, 200);
  EXPECT_EQ(cached_of(post(port, completion(kSecret), "key-two")), 0);
  EXPECT_GT(cached_of(post(port, completion(kSecret), "key-one")), 16);
  // A salt divides a key's namespace further.
  EXPECT_EQ(cached_of(post(port, completion(kSecret, "s"), "key-one")), 0);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerCacheSalt, TheSameSessionIdInTwoNamespacesIsTwoSessions) {
  test::ServerProcess server(model_args());
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  json first = completion(kSecret, "tenant-a");
  first["session_id"] = "shared-name";
  ASSERT_EQ(post(port, first).status, 200);
  json other = first;
  other["cache_salt"] = "tenant-b";
  EXPECT_EQ(cached_of(post(port, other)), 0);
  httplib::Client c("127.0.0.1", port);
  const json stats = json::parse(c.Get("/stats")->body);
  EXPECT_EQ(stats["server"]["sessions"], 2) << stats.dump();
  json bad = first;
  bad["session_id"] = std::string("\x1f") + "0123456789abcdefx";
  EXPECT_EQ(post(port, bad).status, 400);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerCacheSalt, TheDiskTierKeepsNamespacesApartAcrossARestart) {
  const std::string dir = test::temp_dir() + "/salted-cache";
  const std::vector<std::string> args = model_args({"--disk-cache", dir, "--min-free-space-gb", "0"});
  {
    test::ServerProcess server(args);
    ASSERT_GT(server.port(), 0);
    ASSERT_EQ(post(server.port(), completion(kSecret, "tenant-a")).status, 200);
    EXPECT_EQ(server.terminate(30), 0) << server.log();  // the writer drains on exit
  }
  test::ServerProcess server(args);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(cached_of(post(server.port(), completion(kSecret, "tenant-b"))), 0);
  EXPECT_EQ(cached_of(post(server.port(), completion(kSecret))), 0);
  EXPECT_GT(cached_of(post(server.port(), completion(kSecret, "tenant-a"))), 16);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

}  // namespace
}  // namespace clm
