// TierSet: the ordered storage tiers below RAM (fastest first: disk, then
// Redis) as the KV cache manager and the scheduler use them.
// - Demotion, write-through: every full block computed here is copied when
//   it is registered and queued to the background writer (TierWriter),
//   which stores it in every tier. Writing at commit rather than at eviction
//   makes a block visible to other servers as soon as it exists and keeps it
//   across a crash; a dropped write (queue full) is counted, not retried.
// - Promotion: fetch() is called for a prompt before its sequence is
//   scheduled, on the submitting thread; it skips the leading blocks
//   resident in RAM and reads the continuation of the chain from the first
//   tier holding it (exists, then get), straight into pool blocks the
//   caller reserved (cache/kv_landing.h). The scheduler then publishes them
//   as cached blocks (KvCacheManager::adopt). An entry found in a
//   slower tier (Redis) is also queued to the faster ones (the disk), so
//   that the next restart finds it locally.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "cache/cache_observer.h"
#include "cache/kv_landing.h"
#include "tier/cache_tier.h"
#include "tier/tier_writer.h"
#include "util/error.h"

namespace clm {

// Opens one tier for the loaded model's fingerprint and KV layout.
using TierFactory = std::function<Result<std::unique_ptr<CacheTier>>(uint64_t model_fingerprint, const KvGeometry&)>;

struct TierCounters {
  std::string name;
  uint64_t hits = 0;            // blocks delivered to promotion
  uint64_t misses = 0;          // chain lookups that found the next block absent or unusable
  uint64_t writes = 0;          // entries stored
  uint64_t writes_refused = 0;  // entries the tier refused (full, unavailable)
  std::string breaker_state;    // remote tiers: "closed", "open", "half_open"; else empty
  uint64_t damaged_values = 0;         // remote tiers: values read back and refused (failed a check)
  uint64_t unauthenticated_values = 0;  // of those, values whose MAC did not verify
  bool holds_storage = false;   // a disk or SQLite tier: the two figures below are its
  uint64_t stored_bytes = 0;    // bytes of the entries it holds
  uint64_t quarantined = 0;     // damaged entries it set aside
  double hit_rate() const { return hits + misses == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(hits + misses); }
};

struct TierStats {
  std::vector<TierCounters> tiers;  // fastest first
  uint64_t writes_queued = 0;
  uint64_t writes_dropped = 0;      // the writer's queue was full
  std::size_t writes_pending = 0;
  uint64_t blocks_promoted = 0;     // tier entries copied into the RAM pool
  uint64_t copies_to_faster = 0;    // entries read from a slower tier queued to the faster ones (Redis to disk)
  // Tiers asked for but left out at start because their store could not be
  // opened then (a full disk): why, each. They are used again after a restart.
  std::vector<std::string> unavailable;
  // Bytes held by the tiers that own their storage (disk, SQLite); the
  // seed's `disk_cache_size_gb` in GB (10^9 bytes).
  uint64_t disk_cache_bytes() const;
  uint64_t quarantined() const;
};

class TierSet : public CacheObserver {
 public:
  // events: told of the entries each tier stores and drops (medium: the
  // tier's name); null: nobody listens.
  TierSet(std::vector<std::unique_ptr<CacheTier>> tiers, uint64_t model_fingerprint, const KvGeometry& geometry,
          std::size_t write_queue_bytes, KvEventSink* events = nullptr);
  ~TierSet() override;  // writes what is queued first

  bool empty() const { return tiers_.empty(); }
  // The entries continuing `chain` (a prompt's full block keys, first block
  // first) after its leading blocks resident in RAM, in chain order; each
  // was checked by its tier and names the previous key as its parent. Their
  // K/V lands in blocks taken from `landing` while it has some (a block
  // whose read failed is given back to it), else in their own buffers.
  std::vector<LandedEntry> fetch(std::span<const BlockKey> chain, KvLandingSource* landing = nullptr);
  void count_promoted(std::size_t n) { promoted_ += n; }
  // Waits until every write queued so far is done.
  void flush() { writer_->flush(); }
  TierStats stats() const;
  // Sets the size cap of every tier that owns its storage (disk, SQLite;
  // 0: none), evicting what no longer fits; returns how many tiers took it.
  std::size_t set_storage_cap(uint64_t max_bytes);

  // CacheObserver (the scheduler's thread; never blocks).
  void block_computed(const CachedBlockView& block) override;
  void block_resident(BlockKey key) override;
  void block_gone(BlockKey key) override;

 private:
  std::vector<std::unique_ptr<CacheTier>> tiers_;
  uint64_t fingerprint_;
  KvGeometry geometry_;
  mutable std::mutex mu_;  // guards resident_ and the lookup counters
  std::unordered_set<BlockKey> resident_;
  std::vector<uint64_t> hits_, misses_;
  std::atomic<uint64_t> promoted_{0};
  std::atomic<uint64_t> copies_to_faster_{0};
  std::unique_ptr<TierWriter> writer_;
};

}  // namespace clm
