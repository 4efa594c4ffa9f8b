// The tier set over real components: a disk tier in a temporary directory in
// front of a real redis-server (support/redis_server.h). A block found in
// Redis is copied to the disk; children whose parent is missing from Redis
// are never promoted; a Redis hit renews the entry's time to live.
#include <gtest/gtest.h>

#include "support/redis_server.h"
#include "support/test_paths.h"
#include "support/tier_entries.h"
#include "tier/open_cache_tier.h"
#include "tier/redis_tier.h"
#include "tier/store_tier.h"
#include "tier/tier_set.h"

namespace clm {
namespace {

using test::chain_entries;
using test::small_tier_geometry;

constexpr uint64_t kFingerprint = 0x5eed;

std::unique_ptr<RedisTier> open_redis(const test::RedisServer& server, int ttl_s = 600) {
  RedisTierOptions o;
  o.address = *parse_redis_url(server.url());
  o.ttl_s = ttl_s;
  auto tier = RedisTier::open(o, kFingerprint, small_tier_geometry());
  EXPECT_TRUE(tier) << tier.error().message;
  return tier ? std::move(*tier) : nullptr;
}

std::unique_ptr<StoreTier> open_disk(const std::string& dir) {
  DiskTierOptions o;
  o.min_free_bytes = 0;
  auto store = open_entry_store(dir, o);
  EXPECT_TRUE(store) << store.error().message;
  return std::make_unique<StoreTier>(std::move(*store), kFingerprint, small_tier_geometry());
}

std::vector<BlockKey> keys_of(const std::vector<TierEntry>& entries) {
  std::vector<BlockKey> keys;
  for (const TierEntry& e : entries) keys.push_back(e.key);
  return keys;
}

// Disk first, Redis second, as --disk-cache with --redis builds them.
std::unique_ptr<TierSet> disk_then_redis(const std::string& dir, const test::RedisServer& server) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(open_disk(dir));
  tiers.push_back(open_redis(server));
  return std::make_unique<TierSet>(std::move(tiers), kFingerprint, small_tier_geometry(), 1 << 20);
}

TEST(TierSetRedis, ABlockFoundInRedisIsCopiedToTheDisk) {
  test::RedisServer server;
  const std::string dir = test::temp_dir() + "/cache";
  const auto chain = chain_entries(kFingerprint, 3);
  auto other_server = open_redis(server);  // what a second server wrote
  for (const TierEntry& e : chain) ASSERT_TRUE(other_server->put(e));
  {
    auto set = disk_then_redis(dir, server);
    ASSERT_EQ(set->fetch(keys_of(chain)).size(), 3u);
    set->flush();
    const TierStats s = set->stats();
    EXPECT_EQ(s.copies_to_faster, 3u);
    EXPECT_EQ(s.tiers[0].name, "disk");
    EXPECT_EQ(s.tiers[0].writes, 3u);
    EXPECT_EQ(s.tiers[0].stored_bytes, open_disk(dir)->stored_bytes());
    EXPECT_GT(s.disk_cache_bytes(), 0u);
  }
  // After a restart with Redis gone, the disk alone has the chain.
  server.kill();
  auto disk = open_disk(dir);
  EXPECT_EQ(disk->exists(keys_of(chain)), 3u);
  for (const TierEntry& e : chain) EXPECT_TRUE(test::same_entry(*disk->get(e.key), e));
}

TEST(TierSetRedis, ChildrenOfAParentMissingFromRedisAreNeverPromoted) {
  test::RedisServer server;
  const std::string dir = test::temp_dir() + "/cache";
  const auto chain = chain_entries(kFingerprint, 3);
  auto redis = open_redis(server);
  for (const TierEntry& e : chain) ASSERT_TRUE(redis->put(e));
  ASSERT_EQ(server.command({"DEL", redis->key_name(chain[0].key)}), "1");  // expired or evicted by Redis
  auto set = disk_then_redis(dir, server);
  EXPECT_TRUE(set->fetch(keys_of(chain)).empty());
  set->flush();
  EXPECT_EQ(set->stats().copies_to_faster, 0u);
  EXPECT_EQ(open_disk(dir)->stored_bytes(), 0u) << "nothing of the orphaned chain reaches the disk";
}

TEST(TierSetRedis, AHitRenewsTheTimeToLiveInRedis) {
  test::RedisServer server;
  auto redis = open_redis(server, 600);
  const TierEntry e = chain_entries(kFingerprint, 1)[0];
  ASSERT_TRUE(redis->put(e));
  const std::string name = redis->key_name(e.key);
  ASSERT_EQ(server.command({"EXPIRE", name, "5"}), "1");  // as if written long ago
  ASSERT_TRUE(redis->get(e.key));
  EXPECT_GT(std::stoi(server.command({"TTL", name})), 500) << "read, so kept for another full TTL";
  EXPECT_EQ(redis->breaker_state(), "closed");
}

}  // namespace
}  // namespace clm
