#include "tier/cache_tier.h"

namespace clm {

std::optional<TierEntry> CacheTier::get(BlockKey key) {
  std::vector<std::byte> kv(geometry().block_bytes());
  std::optional<TierEntry> entry = get_into(key, kv);
  if (entry) entry->kv = std::move(kv);
  return entry;
}

}  // namespace clm
