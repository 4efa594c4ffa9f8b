// CacheOptions: the user's settings of the KV cache manager's cached blocks
// (whether prefixes are reused, how long idle blocks stay). Settings only:
// what the manager is handed to work with is CacheDeps (cache/cache_deps.h).
#pragma once

#include <cstdint>

namespace clm {

struct CacheOptions {
  // Reuse the K/V of identical prompt prefixes (false: cache nothing).
  bool prefix_caching = true;
  // Also reuse the leading tokens of a cached block that continues the
  // prompt only partly, by copying them (see KvCacheManager::match_prefix).
  bool partial_block_reuse = true;
  // An idle cached block hit this many times lives on the hot level, which
  // is evicted only when the normal level is empty.
  uint32_t hot_after_hits = 2;
  // Idle cached blocks unused for longer are dropped by sweep_expired(); 0 = never.
  double ttl_seconds = 0.0;
};

}  // namespace clm
