// RedisTier: full KV blocks in a Redis server, shared by every instance that
// serves the same model with the same KV layout (DESIGN.md "Tiers and
// persistence"). Keys are <prefix>:<model fingerprint>:<KV type and block
// size>:<block key>, so other models and layouts never collide; every value
// is an encoded TierEntry (tier/entry_codec.h: the same safetensors bytes the disk tier writes) stored with a time-to-live.
// A value that fails its checks is a miss and is deleted.
//
// Redis is a network peer, not a trusted disk: it may be slow, dead or
// hostile. Every operation has a deadline for the whole of it (a reply that
// trickles in byte by byte runs into it too), a reply larger than one stored
// entry is refused before it is buffered whole, and a circuit breaker skips
// Redis for a cool-down after an error or a timeout, so it costs at most one
// timeout per cool-down, never a failed request.
// Lookups and writes use separate connections so that background writes
// never queue in front of an admission's lookup. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tier/cache_tier.h"
#include "tier/circuit_breaker.h"
#include "tier/redis_url.h"
#include "tier/tier_health.h"
#include "util/sha256.h"

struct redisContext;

namespace clm {

struct RedisOpBounds;

struct RedisTierOptions {
  RedisAddress address;
  std::string key_prefix = "clmcache";
  int ttl_s = 3600;                   // an entry expires this long after it was last written or read
  double connect_timeout_s = 0.25;
  double command_timeout_s = 0.25;   // one whole operation (its commands and replies)
  double breaker_cooldown_s = 10.0;   // how long Redis is skipped after a failure
  // With a secret, every value carries an HMAC-SHA256 over its Redis key
  // (prefix, model fingerprint, layout, block key) and its bytes; a value
  // whose MAC does not verify is a miss, counted and deleted. Such entries
  // live under keys of their own, apart from unauthenticated ones.
  std::string secret;
  std::function<double()> clock;      // the breaker's clock (tests)
};

class RedisTier : public CacheTier, public TierHealth {
 public:
  // Connects lazily: a Redis that is down at start is a breaker trip, not an
  // error. Fails only on options that cannot work (TTL < 1, no host).
  static Result<std::unique_ptr<RedisTier>> open(const RedisTierOptions& options, uint64_t model_fingerprint,
                                                 const KvGeometry& geometry);
  ~RedisTier() override;

  std::string name() const override { return "redis"; }
  std::size_t exists(std::span<const BlockKey> chain) override;
  const KvGeometry& geometry() const override { return geometry_; }
  std::optional<TierEntry> get_into(BlockKey key, std::span<std::byte> kv) override;
  bool put(const TierEntry& entry) override;
  void remove(BlockKey key) override;
  void set_removal_listener(TierRemovalListener listener) override { removal_listener_ = std::move(listener); }
  std::string breaker_state() const override { return breaker_state_name(breaker_.state()); }
  uint64_t damaged_values() const override { return damaged_.load(); }
  uint64_t unauthenticated_values() const override { return unauthenticated_.load(); }

  const CircuitBreaker& breaker() const { return breaker_; }
  // The Redis key of a block (tests damage values through it).
  std::string key_name(BlockKey key) const;

 private:
  // One connection and the mutex that serializes its use.
  struct Link {
    std::mutex mu;
    redisContext* ctx = nullptr;
    uint64_t epoch = 0;  // the breaker's trip count when it connected
  };
  RedisTier(const RedisTierOptions& options, uint64_t model_fingerprint, const KvGeometry& geometry);
  // Runs `body` on the link's connection (connecting first if needed) when
  // the breaker allows, within fresh bounds; a false from body (I/O error,
  // timeout, error reply, a reply too large) drops the connection and trips
  // the breaker, except that an idle connection the peer had closed is
  // replaced and body retried once. False when skipped or failed.
  bool call(Link& link, const std::function<bool(redisContext*, const RedisOpBounds&)>& body);
  // A new operation's deadline and reply bound.
  RedisOpBounds bounds() const;
  bool connect(Link& link);
  // The MAC a value stored under Redis key `name` carries (with a secret).
  Sha256Digest mac_of(std::string_view name, std::span<const char> value) const;
  bool mac_verifies(std::string_view name, std::span<const char> value, std::span<const char> mac) const;
  static constexpr std::size_t kMacBytes = 32;
  static void drop(Link& link);

  RedisTierOptions options_;
  uint64_t fingerprint_;
  KvGeometry geometry_;
  std::string key_base_;  // "<prefix>:<fingerprint>:<layout>:"
  CircuitBreaker breaker_;
  Link lookup_, store_;
  std::atomic<uint64_t> damaged_{0};
  std::atomic<uint64_t> unauthenticated_{0};
  TierRemovalListener removal_listener_;
};

}  // namespace clm
