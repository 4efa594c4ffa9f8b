#include "app/tier_flags.h"

#include "tier/redis_tier.h"

namespace clm {

void add_tier_flags(CLI::App& cmd, TierFlags& f) {
  cmd.add_option("--redis", f.redis_url,
                 "share computed KV blocks through Redis at redis://host:port[/db] (a cache tier below RAM)");
  cmd.add_option("--redis-ttl", f.redis_ttl_s, "seconds a block written to Redis lives there")
      ->check(CLI::Range(1, 365 * 24 * 3600));
}

Result<std::vector<TierFactory>> tier_factories(const TierFlags& f) {
  std::vector<TierFactory> tiers;
  // Fastest first: a local disk cache would go here, before Redis.
  if (!f.redis_url.empty()) {
    auto address = parse_redis_url(f.redis_url);
    if (!address) return fail("--redis: " + address.error().message);
    RedisTierOptions options;
    options.address = *address;
    options.ttl_s = f.redis_ttl_s;
    tiers.push_back([options](uint64_t fingerprint, const KvGeometry& geometry) -> Result<std::unique_ptr<CacheTier>> {
      auto tier = RedisTier::open(options, fingerprint, geometry);
      if (!tier) return fail(tier.error().message);
      return std::unique_ptr<CacheTier>(std::move(*tier));
    });
  }
  return tiers;
}

}  // namespace clm
