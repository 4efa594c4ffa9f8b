#include "tier/open_cache_tier.h"

#include "tier/disk_store.h"
#include "tier/sqlite_store.h"
#include "tier/store_tier.h"

namespace clm {

Result<std::unique_ptr<EntryStore>> open_entry_store(const std::string& spec, const DiskTierOptions& options) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (spec.starts_with(kSqlite)) {
    auto store = SqliteStore::open(spec.substr(kSqlite.size()), options);
    if (!store) return std::unexpected(store.error());
    return std::unique_ptr<EntryStore>(std::move(*store));
  }
  auto store = DiskStore::open(spec, options);
  if (!store) return std::unexpected(store.error());
  return std::unique_ptr<EntryStore>(std::move(*store));
}

Result<std::unique_ptr<CacheTier>> open_cache_tier(const std::string& spec, uint64_t model_fingerprint,
                                                   const KvGeometry& geometry, const DiskTierOptions& options) {
  if (geometry.block_bytes() == 0) return fail("a cache tier needs the KV geometry of the pool");
  auto store = open_entry_store(spec, options);
  if (!store) return std::unexpected(store.error());
  return std::unique_ptr<CacheTier>(std::make_unique<StoreTier>(std::move(*store), model_fingerprint, geometry));
}

}  // namespace clm
