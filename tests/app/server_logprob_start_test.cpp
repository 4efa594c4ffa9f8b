// `logprob_start_len` against the real `clmcache serve`: an evaluator scores
// a context and a continuation, and every position from the start index on
// gets its logprob whatever the cache holds (an exact prefix, a shifted
// span, blend's copies, blocks restored from the disk tier), while reuse
// still supplies what lies before it. In prefix mode those logprobs are a
// cold run's, bit for bit.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

// Texts no other request of these tests starts with.
const char* kContext =
    "A little red hen found a grain of wheat in the yard. She asked the cat, the dog and the duck to help "
    "her plant it, but each of them said no.";
const char* kContinuation = " So she planted it herself, and it grew tall and golden.";
const char* kOtherContinuation = " The duck was sorry later, when the bread was warm.";
// Chunks longer than a shifted span's recomputed lead (48 tokens).
const char* kChunkA =
    "The fox ran through the snow to find his friend the rabbit, who lived under the old oak by the frozen lake. "
    "They played all afternoon, and when the sun went down the fox walked home with cold paws and a warm heart.";
const char* kChunkB =
    "Lily baked a cake for her grandmother, with strawberries on top and a candle in the middle of it. "
    "Her grandmother laughed and clapped, and they ate the whole cake together on the porch before dinner.";

std::string model() { return test::shared_file("models/stories260K.gguf"); }

std::unique_ptr<httplib::Client> client_for(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_read_timeout(120, 0);
  return c;
}

json post(int port, const json& body) {
  auto res = client_for(port)->Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return json::object();
  EXPECT_EQ(res->status, 200) << res->body;
  json j = json::parse(res->body, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// Scores `ids` without generating; start < 0 leaves logprob_start_len out.
json score(int port, const std::vector<int32_t>& ids, const char* reuse, int start) {
  json body = {{"prompt", ids},   {"echo", true},   {"logprobs", 2},          {"max_tokens", 0},
               {"reuse", reuse},  {"temperature", 0}, {"return_tokens_as_token_ids", true}};
  if (start >= 0) body["logprob_start_len"] = start;
  return post(port, body);
}

// The ids of `text` (BOS included, or dropped), read from an echo.
std::vector<int32_t> tokenize(int port, const std::string& text, bool bos = true) {
  const json r = post(port, {{"prompt", text},
                             {"echo", true},
                             {"logprobs", 0},
                             {"max_tokens", 0},
                             {"reuse", "off"},
                             {"return_tokens_as_token_ids", true}});
  std::vector<int32_t> ids;
  for (const auto& t : r["choices"][0]["logprobs"]["tokens"]) ids.push_back(std::stoi(t.get<std::string>().substr(9)));
  if (!bos && !ids.empty()) ids.erase(ids.begin());
  return ids;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const json& reuse_of(const json& r) { return r["usage"]["prompt_tokens_details"]["reuse"]; }

// The breakdown covers the prompt whatever was reused.
void expect_breakdown_adds_up(const json& r, std::size_t n) {
  const json& reuse = reuse_of(r);
  EXPECT_EQ(reuse["prefix"].get<int>() + reuse["shift"].get<int>() + reuse["recomputed"].get<int>() +
                reuse["computed"].get<int>(),
            static_cast<int>(n))
      << r["usage"].dump();
  EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            reuse["prefix"].get<int>() + reuse["shift"].get<int>());
}

// Every position from `start` on has a logprob and its alternatives.
void expect_scored_from(const json& r, std::size_t n, int start) {
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  for (std::size_t i = static_cast<std::size_t>(std::max(start, 1)); i < n; ++i) {
    EXPECT_TRUE(lp["token_logprobs"][i].is_number()) << "position " << i << ": " << r["usage"].dump();
    EXPECT_TRUE(lp["top_logprobs"][i].is_object()) << "position " << i;
  }
}

// Positions from `start` on are the same values, bit for bit.
void expect_same_from(const json& got, const json& want, std::size_t n, int start) {
  const json& a = got["choices"][0]["logprobs"];
  const json& b = want["choices"][0]["logprobs"];
  for (std::size_t i = static_cast<std::size_t>(start); i < n; ++i) {
    EXPECT_EQ(a["token_logprobs"][i], b["token_logprobs"][i]) << "position " << i;
    EXPECT_EQ(a["top_logprobs"][i], b["top_logprobs"][i]) << "position " << i;
  }
}

bool any_null_from(const json& r, std::size_t n, int start) {
  const json& v = r["choices"][0]["logprobs"]["token_logprobs"];
  for (std::size_t i = static_cast<std::size_t>(start); i < n; ++i)
    if (v[i].is_null()) return true;
  return false;
}

class ServerLogprobStart : public test::SharedServerTest<ServerLogprobStart> {
 public:
  static std::vector<std::string> server_args() { return {"-m", model(), "-c", "512"}; }
};

TEST_F(ServerLogprobStart, APrefixHitScoresTheContinuationAsAColdRunDoes) {
  const std::vector<int32_t> context = tokenize(port(), kContext);
  ASSERT_GT(context.size(), 33u);  // more than one 32-token block
  const std::vector<int32_t> ids = cat(context, tokenize(port(), kContinuation, false));
  const std::vector<int32_t> other = cat(context, tokenize(port(), kOtherContinuation, false));
  const int k = static_cast<int>(context.size());
  const json cold = score(port(), ids, "off", -1);
  expect_scored_from(cold, ids.size(), 1);

  // The same context with another continuation warms the cache; scored again
  // without the field, the context's positions lose their logprobs.
  score(port(), other, "prefix", -1);
  const json plain = score(port(), ids, "prefix", -1);
  ASSERT_GE(reuse_of(plain)["prefix"].get<int>(), k - 1);
  ASSERT_TRUE(any_null_from(plain, ids.size(), k - 1));

  for (const std::vector<int32_t>* warm : {&other, &ids}) {
    score(port(), *warm, "prefix", -1);
    const json r = score(port(), ids, "prefix", k);
    expect_breakdown_adds_up(r, ids.size());
    // Reuse still supplies everything before row k - 1: whole blocks, then
    // a partial copy up to the limit.
    EXPECT_EQ(reuse_of(r)["prefix"], k - 1) << r["usage"].dump();
    EXPECT_EQ(reuse_of(r)["computed"], static_cast<int>(ids.size()) - (k - 1));
    expect_scored_from(r, ids.size(), k);
    expect_same_from(r, cold, ids.size(), k);
  }

  // Zero computes every row; a start past the prompt promises nothing more.
  const json all = score(port(), ids, "prefix", 0);
  EXPECT_EQ(reuse_of(all)["computed"], ids.size());
  expect_same_from(all, cold, ids.size(), 0);
  const json past = score(port(), ids, "prefix", 10000);
  EXPECT_EQ(reuse_of(past)["prefix"], ids.size() - 1);
}

TEST_F(ServerLogprobStart, ShiftedSpansStopBeforeTheStart) {
  // One span after different heads, then a continuation to score.
  const std::vector<int32_t> span = tokenize(port(), kChunkA, false);
  const std::vector<int32_t> head = tokenize(port(), kChunkB);
  const std::vector<int32_t> continuation = tokenize(port(), kContinuation, false);
  auto prompt = [&](std::size_t head_tokens) {
    return cat(cat(std::vector<int32_t>(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(head_tokens)), span),
               continuation);
  };
  score(port(), prompt(5), "shift", -1);
  const std::vector<int32_t> ids = prompt(9);
  const int k = static_cast<int>(ids.size() - continuation.size());
  const json r = score(port(), ids, "shift", k);
  expect_breakdown_adds_up(r, ids.size());
  EXPECT_GT(reuse_of(r)["shift"].get<int>(), 0) << r["usage"].dump();
  expect_scored_from(r, ids.size(), k);
  // Without the field the copied continuation has no logprobs.
  const std::vector<int32_t> third = prompt(13);
  const json plain = score(port(), third, "shift", -1);
  EXPECT_TRUE(any_null_from(plain, third.size(), static_cast<int>(third.size() - continuation.size())))
      << plain["usage"].dump();
}

TEST_F(ServerLogprobStart, BlendKeepsItsCopiesBeforeTheStart) {
  // The second chunk and the continuation cached together after another
  // head, then asked after the first chunk: blend copies (and partly
  // recomputes) the second chunk, but nothing of the continuation.
  const std::vector<int32_t> a = tokenize(port(), kChunkA), b = tokenize(port(), kChunkB, false);
  const std::vector<int32_t> a_tail(a.begin() + 1, a.end());
  const std::vector<int32_t> continuation = tokenize(port(), kOtherContinuation, false);
  score(port(), cat(cat(tokenize(port(), kChunkB), continuation), a_tail), "prefix", -1);
  const std::vector<int32_t> ids = cat(cat(a, b), continuation);
  const int k = static_cast<int>(a.size() + b.size());
  auto blend = [&](int start) {
    json body = {{"prompt", ids},    {"echo", true},     {"logprobs", 1},       {"max_tokens", 0},
                 {"reuse", "blend"}, {"blend_ratio", 0.3}, {"temperature", 0}};
    if (start >= 0) body["logprob_start_len"] = start;
    return post(port(), body);
  };
  const json r = blend(k);
  expect_breakdown_adds_up(r, ids.size());
  EXPECT_GT(reuse_of(r)["shift"].get<int>(), 0) << r["usage"].dump();
  EXPECT_GT(reuse_of(r)["recomputed"].get<int>(), 0) << r["usage"].dump();
  expect_scored_from(r, ids.size(), k);
  // Without the field the copied continuation has no logprobs.
  const json plain = blend(-1);
  EXPECT_TRUE(any_null_from(plain, ids.size(), k)) << plain["usage"].dump();
}

TEST_F(ServerLogprobStart, BadValuesAreRefusedByName) {
  for (const json& bad : {json(-1), json(2.5), json("3"), json(true)}) {
    auto res = client_for(port())->Post(
        "/v1/completions",
        json{{"prompt", "x"}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}, {"logprob_start_len", bad}}.dump(),
        "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad.dump() << " " << res->body;
    const json j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << res->body;
    EXPECT_EQ(j["error"]["param"], "logprob_start_len") << res->body;
  }
}

// A restarted server restores the context's blocks from the disk tier; the
// continuation is still scored, as a cold run scores it.
TEST(ServerLogprobStartDisk, BlocksRestoredFromDiskStopBeforeTheStart) {
  const std::string dir = test::temp_dir() + "/cache";
  const std::vector<std::string> args = {"-m", model(), "-c", "512", "--block-size", "16",
                                         "--disk-cache", dir, "--min-free-space-gb", "0"};
  std::vector<int32_t> ids;
  int k = 0;
  json cold;
  {
    test::ServerProcess first(args);
    ASSERT_GT(first.port(), 0);
    const std::vector<int32_t> context = tokenize(first.port(), kContext);
    ids = cat(context, tokenize(first.port(), kContinuation, false));
    k = static_cast<int>(context.size());
    // The limit falls inside a block the prompt fills, so the disk holds it.
    ASSERT_NE((k - 1) % 16, 0);
    ASSERT_GE(ids.size(), static_cast<std::size_t>((k - 1) / 16 * 16 + 16));
    cold = score(first.port(), ids, "off", -1);
    score(first.port(), ids, "prefix", -1);
    for (int i = 0; i < 500; ++i) {  // until the writer is done
      auto stats = client_for(first.port())->Get("/stats");
      ASSERT_TRUE(stats);
      if (json::parse(stats->body)["tiers"]["writes_pending"] == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(first.terminate(30), 0) << first.log();
  }
  test::ServerProcess second(args);
  ASSERT_GT(second.port(), 0);
  const json r = score(second.port(), ids, "prefix", k);
  expect_breakdown_adds_up(r, ids.size());
  // Whole blocks restored below the limit, then a partial copy of the one
  // across it.
  EXPECT_EQ(reuse_of(r)["prefix"], k - 1) << r["usage"].dump();
  expect_scored_from(r, ids.size(), k);
  expect_same_from(r, cold, ids.size(), k);
  auto stats = client_for(second.port())->Get("/stats");
  ASSERT_TRUE(stats);
  EXPECT_GT(json::parse(stats->body)["tiers"]["blocks_promoted"].get<int>(), 0) << stats->body;
  EXPECT_EQ(second.terminate(30), 0) << second.log();
}

}  // namespace
}  // namespace clm
