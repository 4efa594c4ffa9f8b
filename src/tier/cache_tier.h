// CacheTier: a store of full KV blocks below the RAM pool (DESIGN.md "Tiers
// and persistence"): the local disk, an SQLite file, Redis. A tier is built
// for one model fingerprint and one KV geometry and checks every entry it
// reads against them; an entry that fails a check is a miss, never an error.
// Calls may block on I/O: the cache manager never calls a tier on the
// scheduler's thread or under its lock (reads happen before admission,
// writes go through a background writer).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "cache/tier_entry.h"

namespace clm {

// Keys of entries a tier dropped (eviction, expiry, damage, removal), each
// with the entries depending on it. Called on whichever thread dropped
// them, possibly under the tier's lock: it must not block or call back.
using TierRemovalListener = std::function<void(std::span<const BlockKey> keys)>;

class CacheTier {
 public:
  virtual ~CacheTier() = default;

  // A short name for logs and stats: "disk", "sqlite", "redis".
  virtual std::string name() const = 0;
  // The KV layout of the entries this tier serves (the pool's).
  virtual const KvGeometry& geometry() const = 0;
  // How many keys at the start of chain (parent first) are present. Cheap:
  // looks at the index, not at the bytes.
  virtual std::size_t exists(std::span<const BlockKey> chain) = 0;
  // The entry stored under key with its K/V read straight into kv (one
  // block's bytes, the pool's block layout; promotion passes a reserved pool
  // block), checked (fingerprint, key, geometry before the K/V is read, the
  // checksum over what was read); the returned entry's own kv is empty.
  // nullopt when absent or unusable, and then kv holds nothing usable.
  virtual std::optional<TierEntry> get_into(BlockKey key, std::span<std::byte> kv) = 0;
  // The same with the K/V in the returned entry's own buffer.
  std::optional<TierEntry> get(BlockKey key);
  // Stores an entry; false when it was refused (no space, size cap, tier
  // unavailable). Never throws.
  virtual bool put(const TierEntry& entry) = 0;
  // Forgets the entry under key (no-op when absent).
  virtual void remove(BlockKey key) = 0;
  // Set once, before the tier is used. Tiers report what they drop
  // themselves; entries a server expires on its own (Redis' TTL) are not
  // seen, so such a tier reports only the deletions it makes.
  virtual void set_removal_listener(TierRemovalListener listener) = 0;
};

}  // namespace clm
