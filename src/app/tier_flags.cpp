#include "app/tier_flags.h"

#include "tier/open_cache_tier.h"
#include "tier/redis_tier.h"
#include "util/bounded_file.h"

namespace clm {

void add_tier_flags(CLI::App& cmd, TierFlags& f) {
  cmd.add_option("--disk-cache", f.disk_cache,
                 "keep computed KV blocks across restarts in this directory, or in one SQLite file with "
                 "sqlite:FILE (a cache tier below RAM)");
  cmd.add_option("--disk-cache-max-gb", f.disk_cache_max_gb,
                 "size cap of the disk cache in GB; least recently used entries go first (0: no cap)")
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--min-free-space-gb", f.min_free_space_gb,
                 "a disk cache write never leaves less than this free on its filesystem")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd.add_option("--disk-cache-ttl", f.disk_cache_ttl_s, "seconds a disk cache entry lives without being read")
      ->check(CLI::Range(1.0, 1e9))
      ->capture_default_str();
  cmd.add_option("--redis", f.redis_url,
                 "share computed KV blocks through Redis at redis://host:port[/db] (a cache tier below RAM)");
  cmd.add_option("--redis-secret", f.redis_secret,
                 "authenticate every value in Redis with an HMAC under this secret (shared by the servers)");
  cmd.add_option("--redis-secret-file", f.redis_secret_file, "the --redis-secret, read from a file (its first line)")
      ->excludes("--redis-secret");
  cmd.add_option("--redis-ttl", f.redis_ttl_s, "seconds a block written to Redis lives there")
      ->check(CLI::Range(1, 365 * 24 * 3600));
}

Result<std::vector<TierFactory>> tier_factories(const TierFlags& f) {
  std::vector<TierFactory> tiers;
  // Fastest first: the local disk before Redis.
  if (!f.disk_cache.empty()) {
    DiskTierOptions options;
    options.max_bytes = static_cast<uint64_t>(f.disk_cache_max_gb * 1e9);
    options.min_free_bytes = static_cast<uint64_t>(f.min_free_space_gb * 1e9);
    options.ttl_s = static_cast<int64_t>(f.disk_cache_ttl_s);
    const std::string spec = f.disk_cache;
    tiers.push_back([spec, options](uint64_t fingerprint, const KvGeometry& geometry) {
      auto tier = open_cache_tier(spec, fingerprint, geometry, options);
      // The kind travels: Unavailable (a full disk) lets the server start without the tier.
      if (!tier) return Result<std::unique_ptr<CacheTier>>(fail(tier.error().kind, "--disk-cache " + spec + ": " + tier.error().message));
      return tier;
    });
  }
  if (!f.redis_url.empty()) {
    auto address = parse_redis_url(f.redis_url);
    if (!address) return fail("--redis: " + address.error().message);
    RedisTierOptions options;
    options.address = *address;
    options.ttl_s = f.redis_ttl_s;
    options.secret = f.redis_secret;
    if (!f.redis_secret_file.empty()) {
      auto secret = read_bounded_file(f.redis_secret_file, 4096, "--redis-secret-file");
      if (!secret) return std::unexpected(secret.error());
      while (!secret->empty() && (secret->back() == '\n' || secret->back() == '\r')) secret->pop_back();
      if (secret->empty()) return fail("--redis-secret-file " + f.redis_secret_file + " holds no secret");
      options.secret = std::move(*secret);
    }
    tiers.push_back([options](uint64_t fingerprint, const KvGeometry& geometry) -> Result<std::unique_ptr<CacheTier>> {
      auto tier = RedisTier::open(options, fingerprint, geometry);
      if (!tier) return fail(tier.error().message);
      return std::unique_ptr<CacheTier>(std::move(*tier));
    });
  }
  return tiers;
}

}  // namespace clm
