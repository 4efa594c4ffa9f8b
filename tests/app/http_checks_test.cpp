// The HTTP front's pure checks: the JSON shape scan (depth and value count
// before parsing) and the Host/Origin policy.
#include <gtest/gtest.h>

#include <string>

#include "app/http_policy.h"
#include "app/json_shape.h"

namespace clm {
namespace {

TEST(JsonShape, CountsDepthAndValuesOutsideStrings) {
  JsonShape s = measure_json_shape(R"({"a": [1, 2, {"b": "x]]]"}], "c": true})", 100, 1000);
  EXPECT_EQ(s.max_depth, 3);
  // Values and keys: object, "a", array, 1, 2, object, "b", "x]]]", "c", true.
  EXPECT_EQ(s.values, 10u);
  // Escaped quotes do not end a string.
  s = measure_json_shape(R"(["a\"[[[", -1.5e3])", 100, 1000);
  EXPECT_EQ(s.max_depth, 1);
  EXPECT_EQ(s.values, 3u);
}

TEST(JsonShape, RefusesPastEitherLimitAndStopsEarly) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto too_deep = check_json_shape(deep, 64, 1000000);
  ASSERT_TRUE(too_deep);
  EXPECT_EQ(too_deep->status, 400);
  EXPECT_EQ(too_deep->code, "json_too_deep");
  EXPECT_EQ(measure_json_shape(deep, 64, 1000000).max_depth, 65);  // stopped at the first level too many
  std::string wide = "[";
  for (int i = 0; i < 100; ++i) wide += "1,";
  wide += "1]";
  const auto too_large = check_json_shape(wide, 64, 50);
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->code, "json_too_large");
  EXPECT_FALSE(check_json_shape(wide, 64, 102));
  EXPECT_FALSE(check_json_shape(R"({"prompt": "Once"})", 2, 10));
}

TEST(HttpPolicy, HostMustNameTheServer) {
  const AccessPolicy policy{"127.0.0.1", false, {}};
  EXPECT_TRUE(host_allowed(policy, "127.0.0.1:8080"));
  EXPECT_TRUE(host_allowed(policy, "localhost:8080"));
  EXPECT_TRUE(host_allowed(policy, "LOCALHOST"));
  EXPECT_TRUE(host_allowed(policy, "[::1]:8080"));
  EXPECT_TRUE(host_allowed(policy, "192.168.1.7"));  // an address cannot be rebound
  EXPECT_FALSE(host_allowed(policy, "attacker.example:8080"));
  EXPECT_FALSE(host_allowed(policy, "localhost.attacker.example"));
  EXPECT_FALSE(host_allowed(policy, ""));
  const AccessPolicy named{"myhost", false, {}};
  EXPECT_TRUE(host_allowed(named, "myhost:80"));
}

TEST(HttpPolicy, OriginsAllowedAreOwnListedOrNone) {
  const AccessPolicy policy{"127.0.0.1", false, {"http://app.example:3000"}};
  EXPECT_TRUE(origin_allowed(policy, "", "127.0.0.1:8080"));  // not a browser
  EXPECT_TRUE(origin_allowed(policy, "http://127.0.0.1:8080", "127.0.0.1:8080"));
  EXPECT_TRUE(origin_allowed(policy, "http://app.example:3000", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed(policy, "http://app.example:3001", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed(policy, "http://127.0.0.1:9999", "127.0.0.1:8080"));
  EXPECT_FALSE(origin_allowed(policy, "null", "127.0.0.1:8080"));
  const AccessPolicy any{"127.0.0.1", false, {"*"}};
  EXPECT_TRUE(origin_allowed(any, "https://anything.example", "127.0.0.1:8080"));
}

}  // namespace
}  // namespace clm
