// The flags of the storage tiers below RAM, shared by run, chat and serve:
// --disk-cache SPEC (a directory, or sqlite:FILE) with its limits, and
// --redis URL with --redis-ttl. Turned into the engine's ordered tier
// factories, fastest first: the local disk before Redis.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tier/tier_set.h"
#include "util/error.h"

namespace clm {

struct TierFlags {
  std::string disk_cache;  // empty: no disk tier
  double disk_cache_max_gb = 0;   // 0: no size cap
  double min_free_space_gb = 5;
  double disk_cache_ttl_s = 7 * 24 * 3600;
  std::string redis_url;  // empty: no Redis tier
  int redis_ttl_s = 3600;
  std::string redis_secret;       // empty: values are not authenticated
  std::string redis_secret_file;  // the secret read from a file instead
};

void add_tier_flags(CLI::App& cmd, TierFlags& flags);

// The tiers the flags ask for, fastest first; a bad URL is an error that
// says what is expected.
Result<std::vector<TierFactory>> tier_factories(const TierFlags& flags);

}  // namespace clm
