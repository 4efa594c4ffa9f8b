// Opening a persistent tier from its command-line spelling
// (`--disk-cache SPEC`): a directory for the disk tier, `sqlite:FILE` for
// the SQLite tier.
#pragma once

#include <memory>
#include <string>

#include "tier/cache_tier.h"
#include "tier/entry_store.h"
#include "util/error.h"

namespace clm {

// The store alone, for administration (`clmcache cache`): no model needed.
Result<std::unique_ptr<EntryStore>> open_entry_store(const std::string& spec, const DiskTierOptions& options);

// The tier for one model and KV geometry.
Result<std::unique_ptr<CacheTier>> open_cache_tier(const std::string& spec, uint64_t model_fingerprint,
                                                   const KvGeometry& geometry, const DiskTierOptions& options);

}  // namespace clm
