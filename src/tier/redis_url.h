// The address of a Redis server: redis://host:port[/db] (port defaults to
// 6379, db to 0). Only plain TCP; a URL with credentials, a query or another
// scheme is refused with a message saying what is accepted.
#pragma once

#include <string>
#include <string_view>

#include "util/error.h"

namespace clm {

struct RedisAddress {
  std::string host;
  int port = 6379;
  int db = 0;
};

Result<RedisAddress> parse_redis_url(std::string_view url);

}  // namespace clm
