// The HTTP front's pure checks: the JSON shape scan (depth and value count
// before parsing), the head as the server takes it, and the Host/Origin
// policy.
#include <gtest/gtest.h>

#include <string>

#include "app/http_head.h"
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

TEST(HttpHead, PathLosesItsQueryAndFieldsStayInOrderUpToTheLimit) {
  namespace http = boost::beast::http;
  http::request_header<> head;
  head.method(http::verb::post);
  head.target("/v1/completions?stream=1?x");
  head.insert("Host", "127.0.0.1");
  head.insert("X-Two", "b");
  head.insert("x-two", "c");
  const auto request = request_from_head(head, 3);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "POST");
  EXPECT_EQ(request->path, "/v1/completions");
  ASSERT_EQ(request->headers.size(), 3u);
  EXPECT_EQ(request->headers[1], (std::pair<std::string, std::string>("X-Two", "b")));
  EXPECT_EQ(request->header("X-TWO"), "b");

  const auto over = request_from_head(head, 2);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().status, 431);
  EXPECT_NE(over.error().message.find("more than 2 header fields (--max-headers)"), std::string::npos);
}

TEST(HttpPolicy, HostMustNameTheServer) {
  // Bound to loopback: loopback names and addresses only.
  const AccessPolicy policy{"127.0.0.1", false, {}};
  const std::string_view local = "127.0.0.1";
  EXPECT_TRUE(host_allowed(policy, "127.0.0.1:8080", local));
  EXPECT_TRUE(host_allowed(policy, "localhost:8080", local));
  EXPECT_TRUE(host_allowed(policy, "LOCALHOST", local));
  EXPECT_TRUE(host_allowed(policy, "[::1]:8080", local));
  EXPECT_TRUE(host_allowed(policy, "127.0.0.2", local));
  EXPECT_FALSE(host_allowed(policy, "10.1.2.3", local));  // another machine's address
  EXPECT_FALSE(host_allowed(policy, "192.168.1.7:8080", local));
  EXPECT_FALSE(host_allowed(policy, "attacker.example:8080", local));
  EXPECT_FALSE(host_allowed(policy, "localhost.attacker.example", local));
  EXPECT_FALSE(host_allowed(policy, "", local));
  // Bound to one address: that address, or the --host name given.
  const AccessPolicy lan{"192.168.1.7", false, {}};
  EXPECT_TRUE(host_allowed(lan, "192.168.1.7:80", "192.168.1.7"));
  EXPECT_FALSE(host_allowed(lan, "localhost", "192.168.1.7"));
  EXPECT_FALSE(host_allowed(lan, "127.0.0.1", "192.168.1.7"));
  EXPECT_FALSE(host_allowed(lan, "10.1.2.3", "192.168.1.7"));
  const AccessPolicy named{"localhost", false, {}};
  EXPECT_TRUE(host_allowed(named, "localhost:80", "127.0.0.1"));
  // Bound to every address: whichever one the connection came in on (an
  // IPv6 spelling of it too), loopback names on a loopback connection.
  const AccessPolicy any{"0.0.0.0", false, {}};
  EXPECT_TRUE(host_allowed(any, "192.168.1.7:8080", "192.168.1.7"));
  EXPECT_TRUE(host_allowed(any, "[::ffff:192.168.1.7]:8080", "::ffff:192.168.1.7"));
  EXPECT_FALSE(host_allowed(any, "10.1.2.3:8080", "192.168.1.7"));
  EXPECT_FALSE(host_allowed(any, "localhost:8080", "192.168.1.7"));
  EXPECT_TRUE(host_allowed(any, "localhost:8080", "127.0.0.1"));
  EXPECT_FALSE(host_allowed(any, "192.168.1.7:8080", "127.0.0.1"));
  EXPECT_FALSE(host_allowed(any, "192.168.1.7", ""));  // a socket that cannot say
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
