#include "app/cache_namespace.h"

#include <xxhash.h>

#include <charconv>

#include "util/hex.h"

namespace clm {

namespace {

constexpr char kScopeMark = '\x1f';  // unit separator: never in a client's session_id
constexpr std::size_t kHexDigits = 16;

}  // namespace

uint64_t cache_namespace_for(std::string_view api_key_scope, std::string_view cache_salt) {
  if (api_key_scope.empty() && cache_salt.empty()) return 0;
  std::string framed = "clmcache cache namespace";
  for (std::string_view part : {api_key_scope, cache_salt}) {
    framed += '\0';
    framed += std::to_string(part.size());
    framed += ':';
    framed += part;
  }
  const uint64_t h = XXH3_64bits(framed.data(), framed.size());
  return h == 0 ? 1 : h;
}

std::string scoped_session_id(uint64_t cache_namespace, const std::string& session_id) {
  if (cache_namespace == 0) return session_id;
  return std::string(1, kScopeMark) + hex64(cache_namespace) + session_id;
}

uint64_t session_namespace(std::string_view scoped_id) {
  if (scoped_id.size() < 1 + kHexDigits || scoped_id[0] != kScopeMark) return 0;
  uint64_t ns = 0;
  const char* first = scoped_id.data() + 1;
  const auto [end, ec] = std::from_chars(first, first + kHexDigits, ns, 16);
  return ec == std::errc() && end == first + kHexDigits ? ns : 0;
}

}  // namespace clm
