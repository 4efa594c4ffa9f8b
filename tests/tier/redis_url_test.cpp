#include "tier/redis_url.h"

#include <gtest/gtest.h>

namespace clm {
namespace {

TEST(RedisUrl, HostPortAndDatabase) {
  auto a = parse_redis_url("redis://127.0.0.1:6380/2");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->db, 2);
  auto b = parse_redis_url("redis://cache.local");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "cache.local");
  EXPECT_EQ(b->port, 6379);
  EXPECT_EQ(b->db, 0);
}

TEST(RedisUrl, BadUrlsSayWhatIsExpected) {
  for (const char* bad : {"", "http://h:1", "redis://", "redis://:6379", "redis://h:0", "redis://h:70000",
                          "redis://h:12x", "redis://h:1/x", "redis://user:pw@h:1", "redis://h:1?db=2"}) {
    auto r = parse_redis_url(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("redis://host:port"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace clm
