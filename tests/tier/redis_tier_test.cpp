// The Redis tier against a real redis-server started by the test (see
// support/redis_server.h): round trip, pipelined chain lookups, TTL, damaged
// values, and Redis dead, restarted or answering slowly behind the breaker.
#include "tier/redis_tier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/redis_server.h"
#include "support/tier_entries.h"
#include "support/time_scale.h"
#include "tier/entry_codec.h"

namespace clm {
namespace {

using test::chain_entries;
using test::RedisServer;
using test::small_tier_geometry;

constexpr uint64_t kFingerprint = 0x5eed;
// The socket deadline, and a pause of Redis well past it.
const double kTimeout = 0.2 * test::time_scale();
const int kPauseMs = static_cast<int>(1500 * test::time_scale());

std::string as_string(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Harness {
  explicit Harness(int ttl_s = 600) {
    RedisTierOptions o;
    o.address = *parse_redis_url(server.url());
    o.ttl_s = ttl_s;
    o.command_timeout_s = kTimeout;
    o.connect_timeout_s = kTimeout;
    o.breaker_cooldown_s = 30.0;
    o.clock = [this] { return now; };
    auto t = RedisTier::open(o, kFingerprint, small_tier_geometry());
    EXPECT_TRUE(t) << t.error().message;
    tier = std::move(*t);
  }
  RedisServer server;
  double now = 1000.0;
  std::unique_ptr<RedisTier> tier;
};

TEST(RedisTier, RoundTrip) {
  Harness h;
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  EXPECT_FALSE(h.tier->get(e.key));
  ASSERT_TRUE(h.tier->put(e));
  auto back = h.tier->get(e.key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kv, e.kv);
  EXPECT_EQ(back->tokens, e.tokens);
  EXPECT_EQ(back->positions, e.positions);
  EXPECT_EQ(back->parent, e.parent);
  h.tier->remove(e.key);
  EXPECT_FALSE(h.tier->get(e.key));
  EXPECT_EQ(h.tier->breaker_state(), "closed");
}

TEST(RedisTier, KeysAreNamespacedByModelAndLayout) {
  Harness h;
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(h.tier->put(e));
  EXPECT_EQ(h.server.command({"EXISTS", h.tier->key_name(e.key)}), "1");
  RedisTierOptions o;
  o.address = *parse_redis_url(h.server.url());
  auto other_model = RedisTier::open(o, kFingerprint + 1, small_tier_geometry());
  KvGeometry f32 = small_tier_geometry();
  f32.types = KvType::F32;
  auto other_layout = RedisTier::open(o, kFingerprint, f32);
  KvGeometry q8_k = small_tier_geometry();
  q8_k.types = {KvType::Q8_0, KvType::F16};
  auto q8_layout = RedisTier::open(o, kFingerprint, q8_k);
  ASSERT_TRUE(other_model && other_layout && q8_layout);
  EXPECT_NE((*other_model)->key_name(e.key), h.tier->key_name(e.key));
  EXPECT_NE((*other_layout)->key_name(e.key), h.tier->key_name(e.key));
  EXPECT_NE((*q8_layout)->key_name(e.key), h.tier->key_name(e.key));
  EXPECT_FALSE((*q8_layout)->get(e.key));
  EXPECT_FALSE((*other_model)->get(e.key));
  EXPECT_EQ((*other_model)->exists(std::vector<BlockKey>{e.key}), 0u);
}

TEST(RedisTier, ExistsCountsTheLeadingKeysOfAChain) {
  Harness h;
  const auto chain = chain_entries(kFingerprint, 5);
  for (int i : {0, 1, 2, 4}) ASSERT_TRUE(h.tier->put(chain[static_cast<std::size_t>(i)]));
  std::vector<BlockKey> keys;
  for (const auto& e : chain) keys.push_back(e.key);
  EXPECT_EQ(h.tier->exists(keys), 3u) << "the fourth is missing, the fifth does not count";
  EXPECT_EQ(h.tier->exists(std::span(keys).subspan(4)), 1u);
  EXPECT_EQ(h.tier->exists(std::span(keys).subspan(3)), 0u);
  EXPECT_EQ(h.tier->exists({}), 0u);
  // A long chain is sent whole (pipelined) and every reply is read back.
  std::vector<BlockKey> long_chain(64, chain[0].key);
  EXPECT_EQ(h.tier->exists(long_chain), 64u);
}

TEST(RedisTier, EveryEntryHasTheTtl) {
  Harness h(2);
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(h.tier->put(e));
  const int ttl = std::stoi(h.server.command({"TTL", h.tier->key_name(e.key)}));
  EXPECT_GE(ttl, 1);
  EXPECT_LE(ttl, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_FALSE(h.tier->get(e.key)) << "expired";
  EXPECT_EQ(h.tier->exists(std::vector<BlockKey>{e.key}), 0u);
}

TEST(RedisTier, ADamagedValueIsAMissAndIsDeleted) {
  Harness h;
  const auto chain = chain_entries(kFingerprint, 3);
  for (const auto& e : chain) ASSERT_TRUE(h.tier->put(e));
  // A flipped byte in the K/V bytes.
  EXPECT_NE(h.server.command({"SETRANGE", h.tier->key_name(chain[0].key), "100", "Z"}), "ERR io");
  // A truncated value.
  EXPECT_EQ(h.server.command({"SET", h.tier->key_name(chain[1].key), "short"}), "OK");
  // A well-formed entry of another model stored under our key.
  TierEntry foreign = chain[2];
  foreign.model_fingerprint = kFingerprint + 1;
  EXPECT_EQ(h.server.command({"SET", h.tier->key_name(chain[2].key), as_string(encode_entry(foreign))}), "OK");
  for (const auto& e : chain) {
    EXPECT_FALSE(h.tier->get(e.key));
    EXPECT_EQ(h.server.command({"EXISTS", h.tier->key_name(e.key)}), "0") << "deleted";
  }
  EXPECT_EQ(h.tier->damaged_values(), 3u);
  EXPECT_EQ(h.tier->breaker_state(), "closed") << "damage is not a Redis failure";
}

TEST(RedisTier, ADeadRedisCostsOneFailurePerCooldownAndRecovers) {
  Harness h;
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(h.tier->put(e));
  h.server.kill();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(h.tier->get(e.key));  // the connection is gone: a miss
  EXPECT_EQ(h.tier->breaker_state(), "open");
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(h.tier->get(e.key));
    EXPECT_FALSE(h.tier->put(e));
    EXPECT_EQ(h.tier->exists(std::vector<BlockKey>{e.key}), 0u);
  }
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(h.tier->breaker().failures(), 1u) << "skipped while open, not tried";
  EXPECT_EQ(h.tier->breaker().skipped(), 60u);
  // After the cool-down one trial goes out, fails (still dead), reopens.
  h.now += 31.0;
  EXPECT_FALSE(h.tier->get(e.key));
  EXPECT_EQ(h.tier->breaker().failures(), 2u);
  EXPECT_EQ(h.tier->breaker_state(), "open");
  // Redis back (empty: nothing was saved): the next trial closes the breaker.
  ASSERT_TRUE(h.server.start());
  h.now += 31.0;
  EXPECT_FALSE(h.tier->get(e.key));
  EXPECT_EQ(h.tier->breaker_state(), "closed");
  ASSERT_TRUE(h.tier->put(e));
  EXPECT_TRUE(h.tier->get(e.key));
}

TEST(RedisTier, ASlowRedisTimesOutOnceThenIsSkipped) {
  Harness h;
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(h.tier->put(e));
  ASSERT_TRUE(h.tier->get(e.key));  // the lookup connection is open
  // Every client's commands wait for the pause: 7.5 times the timeout.
  ASSERT_EQ(h.server.command({"CLIENT", "PAUSE", std::to_string(kPauseMs), "ALL"}), "OK");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(h.tier->get(e.key));
  const double first = seconds_since(t0);
  EXPECT_GE(first, 0.75 * kTimeout);
  EXPECT_LT(first, 6 * kTimeout) << "not the whole pause";
  EXPECT_EQ(h.tier->breaker_state(), "open");
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(h.tier->get(e.key));
    EXPECT_EQ(h.tier->exists(std::vector<BlockKey>{e.key}), 0u);
  }
  EXPECT_LT(seconds_since(t0), 5 * kTimeout) << "skipped, not timed out again (20 timeouts would take 20 of them)";
  EXPECT_EQ(h.tier->breaker().failures(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(kPauseMs));  // the pause ends
  h.now += 31.0;
  EXPECT_TRUE(h.tier->get(e.key));
  EXPECT_EQ(h.tier->breaker_state(), "closed");
}

TEST(RedisTier, BadOptionsAreRefused) {
  RedisTierOptions o;
  o.address = *parse_redis_url("redis://127.0.0.1:1");
  o.ttl_s = 0;
  EXPECT_FALSE(RedisTier::open(o, 1, small_tier_geometry()));
  o.ttl_s = 10;
  o.command_timeout_s = 0.0;
  EXPECT_FALSE(RedisTier::open(o, 1, small_tier_geometry()));
}

}  // namespace
}  // namespace clm
