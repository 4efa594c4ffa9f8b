// The flags of the storage tiers below RAM, shared by run, chat and serve:
// --redis URL and --redis-ttl SECONDS. Turned into the engine's ordered tier
// factories (fastest first). The disk cache (--disk-cache, a local tier) is
// to be added in front of Redis in tier_factories().
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tier/tier_set.h"
#include "util/error.h"

namespace clm {

struct TierFlags {
  std::string redis_url;  // empty: no Redis tier
  int redis_ttl_s = 3600;
};

void add_tier_flags(CLI::App& cmd, TierFlags& flags);

// The tiers the flags ask for, fastest first; a bad URL is an error that
// says what is expected.
Result<std::vector<TierFactory>> tier_factories(const TierFlags& flags);

}  // namespace clm
