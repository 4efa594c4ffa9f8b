// Sessions through the real `clmcache serve` on loopback: a session's last
// turn stays pinned in RAM under pressure that evicts an unpinned chain, the
// pinned share of the pool is bounded, pins lapse at --session-timeout, and
// with --persist-sessions a conversation resumes after a restart from the
// disk cache, generating exactly what a cold server does.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/prometheus_text.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"
#include "tier/session_archive.h"
#include "tier/sqlite_db.h"

namespace clm {
namespace {

using nlohmann::json;

constexpr int kBlock = 16;

// 256 tokens of context in blocks of 16: a pool of 16 blocks.
std::vector<std::string> server_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"-m", test::shared_file("models/stories260K.gguf"), "-c", "256", "--block-size",
                                   std::to_string(kBlock)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

const char* kTexts[] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine with her dog.",
    "Tom had a small blue boat. Every morning he took it to the pond and watched it float on the water.",
    "The old owl lived in a tall tree at the edge of the forest. At night she flew over the quiet fields.",
    "Sam and his sister went to the park to fly a red kite. The wind was strong and the kite went very high.",
};

class Client {
 public:
  explicit Client(int port) : c_("127.0.0.1", port) { c_.set_read_timeout(120, 0); }
  json post(const json& body) {
    auto res = c_.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return json::object();
    EXPECT_EQ(res->status, 200) << res->body;
    json j = json::parse(res->body, nullptr, false);
    return j.is_discarded() ? json::object() : j;
  }
  json pins() {
    auto res = c_.Get("/stats");
    EXPECT_TRUE(res);
    return res ? json::parse(res->body)["scheduler"]["session_pins"] : json::object();
  }
  // Pins are applied by the scheduler's thread at its next step: wait for
  // the count the test expects (or give up after a bound).
  json pins_when(const std::function<bool(const json&)>& ready, double timeout_s = 5.0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    json p = pins();
    while (!ready(p) && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      p = pins();
    }
    return p;
  }
  std::string metrics() {
    auto res = c_.Get("/metrics");
    EXPECT_TRUE(res);
    return res ? res->body : std::string();
  }

 private:
  httplib::Client c_;
};

json turn(const std::string& prompt, const std::string& session, int max_tokens = 8) {
  json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"logprobs", 0},
               {"return_tokens_as_token_ids", true}};
  if (!session.empty()) body["session_id"] = session;
  return body;
}

int cached_of(const json& r) { return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(); }
// Whole blocks a finished turn left computed: its prompt and reply but the
// last generated token, which was never fed back.
int turn_blocks(const json& r) {
  return (r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>() - 1) / kBlock;
}
std::string reply_of(const json& r) { return r["choices"][0]["text"].get<std::string>(); }

// A prompt of ids that needs `blocks` blocks at admission (its tokens and
// the slot of the first generated one), and no text any session shares.
json pressure(int blocks, int first_id) {
  std::vector<int> ids;
  for (int i = 0; i < blocks * kBlock - 1; ++i) ids.push_back(first_id + i % 200);
  return {{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}};
}

TEST(SessionServer, APinnedTurnSurvivesPressureThatEvictsAnUnpinnedOne) {
  test::ServerProcess server(server_args({}));
  ASSERT_GT(server.port(), 0);
  Client c(server.port());
  const json a = c.post(turn(kTexts[0], "pinned"));
  const json b = c.post(turn(kTexts[1], ""));
  const int pinned_blocks = turn_blocks(a);
  ASSERT_GE(pinned_blocks, 2);
  ASSERT_GE(turn_blocks(b), 2);
  const json pins = c.pins_when([&](const json& now) { return now["blocks"] == pinned_blocks; });
  EXPECT_EQ(pins["sessions"], 1);
  EXPECT_EQ(pins["blocks"], pinned_blocks);
  // Every block that is not pinned is taken, so every idle one is evicted.
  c.post(pressure(16 - pinned_blocks, 100));
  const json a2 = c.post(turn(std::string(kTexts[0]) + reply_of(a) + " The end.", "pinned"));
  EXPECT_GE(cached_of(a2), pinned_blocks * kBlock);
  const json b2 = c.post(turn(kTexts[1], ""));
  // None of its blocks is left: at most its leading BOS, copied from the
  // pinned chain's first block (partial-block reuse).
  EXPECT_LT(cached_of(b2), kBlock);
  EXPECT_GE(cached_of(c.post(turn(kTexts[1], ""))), 2 * kBlock);  // the control: now it is cached again
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(SessionServer, PinnedBlocksStayWithinTheirShareOfThePool) {
  // A quarter of 16 blocks: one conversation of 3 or more blocks at a time.
  test::ServerProcess server(server_args({"--session-pin-max-share", "0.25"}));
  ASSERT_GT(server.port(), 0);
  Client c(server.port());
  int released = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string session = std::string("s").append(std::to_string(i));
    const json r = c.post(turn(kTexts[i], session, 24));
    ASSERT_GE(turn_blocks(r), 3) << "the bound is only exercised by turns of 3 blocks or more";
    const int want = std::min(4, turn_blocks(r));
    // The pin is applied at the scheduler's next step: wait for this turn's
    // (before it, the count of releases already equals i for the first turn).
    const json p = c.pins_when([&](const json& now) { return now["released_for_room"] == i && now["sessions"] == 1; });
    EXPECT_EQ(p["sessions"], 1) << p.dump();
    EXPECT_EQ(p["blocks"], want) << p.dump();
    EXPECT_EQ(p["released_for_room"], i) << p.dump();
    released = p["released_for_room"].get<int>();
  }
  EXPECT_EQ(released, 2);
  std::string error;
  const auto t = test::parse_prometheus_text(c.metrics(), error);
  EXPECT_EQ(error, "");
  EXPECT_LE(t.sum("clmcache_session_pinned_blocks"), 4.0);
  EXPECT_EQ(t.sum("clmcache_session_pinned_sessions"), 1.0);
  EXPECT_EQ(t.sum("clmcache_session_pins_released_total"), 2.0);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(SessionServer, APinLapsesAtTheSessionTimeout) {
  test::ServerProcess server(server_args({"--session-timeout", "1.5"}));
  ASSERT_GT(server.port(), 0);
  Client c(server.port());
  const auto sent = std::chrono::steady_clock::now();
  c.post(turn(kTexts[2], "brief"));
  // Nothing else happens: the idle server unpins on its own. (The pin itself
  // is not polled for: on a loaded machine a poll can come after it lapsed;
  // the expiry count says it existed.)
  const json p = c.pins_when([](const json& now) { return now["expired"] == 1 && now["sessions"] == 0; }, 15.0);
  EXPECT_EQ(p["sessions"], 0) << p.dump();
  EXPECT_EQ(p["blocks"], 0) << p.dump();
  EXPECT_EQ(p["expired"], 1) << p.dump();
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count(), 1.5);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

std::vector<std::string> token_ids(const json& r) { return r["choices"][0]["logprobs"]["tokens"]; }

TEST(SessionServer, AConversationResumesAfterARestartFromTheDiskCache) {
  const std::string dir = test::temp_dir() + "/cache";
  const auto persistent = server_args({"--disk-cache", dir, "--min-free-space-gb", "0", "--persist-sessions"});
  json first;
  {
    test::ServerProcess server(persistent);
    ASSERT_GT(server.port(), 0);
    Client c(server.port());
    first = c.post(turn(kTexts[3], "conv"));
    c.post(turn(kTexts[1], "broken"));
    ASSERT_EQ(server.terminate(30), 0) << server.log();
  }
  // One saved session is damaged on disk: skipped with one line, no error.
  {
    auto db = SqliteDb::open(SessionArchive::path_for(dir));
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(db->exec("UPDATE sessions SET tokens = X'010203' WHERE id = 'broken'"));
  }
  const std::string second_prompt = std::string(kTexts[3]) + reply_of(first) + " Then they went home.";
  json resumed;
  {
    test::ServerProcess server(persistent);
    ASSERT_GT(server.port(), 0);
    Client c(server.port());
    resumed = c.post(turn(second_prompt, "conv"));
    c.post(turn(std::string(kTexts[1]) + " Again.", "broken"));  // answered, from a fresh encoding
    EXPECT_EQ(server.terminate(30), 0);
    const std::string log = server.log();
    EXPECT_NE(log.find("1 saved session(s) resumed"), std::string::npos) << log;
    std::size_t damaged = 0;
    for (std::size_t at = log.find("damaged session"); at != std::string::npos; at = log.find("damaged session", at + 1))
      ++damaged;
    EXPECT_EQ(damaged, 1u) << log;
  }
  // The whole first turn, prompt and reply, came back from the disk tier.
  EXPECT_GE(cached_of(resumed), turn_blocks(first) * kBlock);
  EXPECT_GT(turn_blocks(first), 2);

  // A cold server: the same conversation computed from nothing.
  test::ServerProcess cold(server_args({}));
  ASSERT_GT(cold.port(), 0);
  Client c(cold.port());
  const json cold_first = c.post(turn(kTexts[3], "conv"));
  EXPECT_EQ(token_ids(cold_first), token_ids(first));
  json body = turn(second_prompt, "conv");
  body["reuse"] = "off";
  const json cold_second = c.post(body);
  EXPECT_EQ(cached_of(cold_second), 0);
  EXPECT_EQ(cold_second["usage"]["prompt_tokens"], resumed["usage"]["prompt_tokens"]);
  EXPECT_EQ(token_ids(cold_second), token_ids(resumed));
  EXPECT_EQ(reply_of(cold_second), reply_of(resumed));
  EXPECT_EQ(cold.terminate(30), 0);
}

TEST(SessionServer, PersistSessionsWithoutADiskCacheIsAClearError) {
  const auto r = test::run_command(test::shell_quote(test::cli_binary()) + " serve --port 0 -m " +
                                   test::shell_quote(test::shared_file("models/stories260K.gguf")) +
                                   " --persist-sessions");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--persist-sessions needs --disk-cache"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm
