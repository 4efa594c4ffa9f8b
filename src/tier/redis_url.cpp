#include "tier/redis_url.h"

#include <charconv>

namespace clm {

namespace {

bool parse_int(std::string_view text, int lo, int hi, int& out) {
  if (text.empty()) return false;
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi) return false;
  out = v;
  return true;
}

}  // namespace

Result<RedisAddress> parse_redis_url(std::string_view url) {
  const std::string expected = "expected redis://host:port[/db], got '" + std::string(url) + "'";
  constexpr std::string_view scheme = "redis://";
  if (!url.starts_with(scheme)) return fail("bad Redis URL: " + expected);
  std::string_view rest = url.substr(scheme.size());
  if (rest.find_first_of("@?#") != std::string_view::npos)
    return fail("bad Redis URL (credentials, queries and fragments are not supported): " + expected);
  RedisAddress a;
  std::string_view authority = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && !parse_int(db, 0, 1 << 20, a.db)) return fail("bad Redis database number: " + expected);
  }
  std::string_view host = authority;
  if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    if (!parse_int(authority.substr(colon + 1), 1, 65535, a.port)) return fail("bad Redis port: " + expected);
  }
  if (host.empty()) return fail("bad Redis URL (no host): " + expected);
  a.host = std::string(host);
  return a;
}

}  // namespace clm
