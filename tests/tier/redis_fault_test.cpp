// The Redis tier against a Redis that misbehaves (tests/support's fault
// proxy in front of a real redis-server): a reply that trickles in runs
// into the operation's deadline and opens the breaker, a reply that
// announces 400 MB is refused before it is buffered, and a Redis that
// restarted costs no dropped write.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "support/redis_fault_proxy.h"
#include "support/redis_server.h"
#include "support/tier_entries.h"
#include "support/time_scale.h"
#include "tier/entry_codec.h"
#include "tier/redis_tier.h"

namespace clm {
namespace {

using test::RedisFaultProxy;
using test::RedisServer;

constexpr uint64_t kFingerprint = 0xfa17;
// The socket deadline: short, so that a fault costs little time here.
const double kTimeout = 0.25 * test::time_scale();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<RedisTier> tier_at(const std::string& url, double* now = nullptr, const std::string& secret = "") {
  RedisTierOptions o;
  o.secret = secret;
  o.address = *parse_redis_url(url);
  o.command_timeout_s = kTimeout;
  o.connect_timeout_s = kTimeout;
  o.breaker_cooldown_s = 30.0;
  if (now) o.clock = [now] { return *now; };
  auto t = RedisTier::open(o, kFingerprint, test::small_tier_geometry());
  EXPECT_TRUE(t) << t.error().message;
  return t ? std::move(*t) : nullptr;
}

// The process's peak resident memory, in bytes.
std::size_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      std::size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

TEST(RedisFault, ATricklingReplyRunsIntoTheDeadlineAndOpensTheBreaker) {
  RedisServer server;
  const TierEntry e = test::chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(tier_at(server.url())->put(e));
  // One byte every 20 ms: each read is well within the 0.25 s socket
  // timeout, but the entry's few KiB would take minutes.
  RedisFaultProxy proxy(server.port(), RedisFaultProxy::Mode::Trickle, 0.02);
  double now = 100.0;
  auto tier = tier_at(proxy.url(), &now);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(tier->get(e.key));
  // The deadline, plus a second for a loaded machine (the bound promised).
  EXPECT_LT(seconds_since(t0), kTimeout + 1.0 * test::time_scale());
  EXPECT_GT(proxy.bytes_sent(), 0u) << "the reply had begun to arrive";
  EXPECT_EQ(tier->breaker_state(), "open");
  // Skipped from now on: no more waiting on it, reads or writes.
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(tier->get(e.key));
    EXPECT_FALSE(tier->put(e));
  }
  EXPECT_LT(seconds_since(t1), 2 * kTimeout);
  EXPECT_EQ(tier->breaker().failures(), 1u);
}

TEST(RedisFault, AHugeReplyIsRefusedBeforeItIsBuffered) {
  RedisServer server;
  RedisFaultProxy proxy(server.port(), RedisFaultProxy::Mode::Huge);
  auto tier = tier_at(proxy.url());
  const TierEntry e = test::chain_entries(kFingerprint, 1)[0];
  const std::size_t peak_before = peak_rss_bytes();
  EXPECT_FALSE(tier->get(e.key));
  const std::size_t grown = peak_rss_bytes() - peak_before;
  // At most one stored entry's bound (about 1 MiB here) and a read past it,
  // not the 400 MB announced.
  EXPECT_LT(grown, std::size_t{64} << 20) << grown;
  EXPECT_LT(proxy.bytes_sent(), std::size_t{64} << 20);
  EXPECT_EQ(tier->breaker_state(), "open");
}

TEST(RedisFault, ARestartedRedisCostsNoWrite) {
  RedisServer server;
  auto tier = tier_at(server.url());
  const auto entries = test::chain_entries(kFingerprint, 2);
  ASSERT_TRUE(tier->put(entries[0]));  // the write connection is open
  ASSERT_TRUE(tier->get(entries[0].key));
  server.kill();
  ASSERT_TRUE(server.start());
  // The old connections were closed by the dead server: the tier reconnects
  // once and the write and the read go through; the breaker stays closed.
  EXPECT_TRUE(tier->put(entries[1]));
  EXPECT_TRUE(tier->get(entries[1].key));
  EXPECT_EQ(tier->breaker_state(), "closed");
  EXPECT_EQ(tier->breaker().failures(), 0u);
}

TEST(RedisFault, APassingProxyChangesNothing) {
  RedisServer server;
  RedisFaultProxy proxy(server.port(), RedisFaultProxy::Mode::Pass);
  auto tier = tier_at(proxy.url());
  const TierEntry e = test::chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(tier->put(e));
  auto back = tier->get(e.key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kv, e.kv);
  EXPECT_GT(proxy.bytes_sent(), e.kv.size());
}

// Anyone who can write to the Redis can store a well-formed entry (its
// checksum is not keyed) under a block's key; with a secret, such an entry is
// a miss, counted and deleted, and servers sharing the secret share entries.
TEST(RedisFault, AForgedEntryIsRefusedWithASecret) {
  RedisServer server;
  auto writer = tier_at(server.url(), nullptr, "s3cret");
  auto reader = tier_at(server.url(), nullptr, "s3cret");
  auto stranger = tier_at(server.url(), nullptr, "another secret");
  const TierEntry e = test::chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(writer->put(e));
  auto shared = reader->get(e.key);
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->kv, e.kv);
  EXPECT_FALSE(stranger->get(e.key)) << "a MAC under another secret verifies";
  EXPECT_EQ(stranger->unauthenticated_values(), 1u);
  // The forgery: the same entry with other K/V, encoded and checksummed as
  // the codec does, written under the authenticated key without a MAC, then
  // with the right length but a wrong MAC.
  ASSERT_TRUE(writer->put(e));
  TierEntry forged = e;
  for (std::byte& b : forged.kv) b = std::byte{0};
  const std::vector<std::byte> bytes = encode_entry(forged);
  std::string value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ASSERT_EQ(server.command({"SET", reader->key_name(e.key), value}), "OK");
  EXPECT_FALSE(reader->get(e.key));
  ASSERT_EQ(server.command({"SET", reader->key_name(e.key), value + std::string(32, 'x')}), "OK");
  EXPECT_FALSE(reader->get(e.key));
  EXPECT_EQ(reader->unauthenticated_values(), 2u);
  EXPECT_EQ(server.command({"EXISTS", reader->key_name(e.key)}), "0") << "the forgery is deleted";
  // Without a secret the same forgery is taken for the real thing: what the
  // README warns of.
  auto open_tier = tier_at(server.url());
  ASSERT_EQ(server.command({"SET", open_tier->key_name(e.key), value}), "OK");
  auto taken = open_tier->get(e.key);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->kv, forged.kv);
  EXPECT_NE(open_tier->key_name(e.key), reader->key_name(e.key)) << "authenticated entries live apart";
}

}  // namespace
}  // namespace clm
