// StoreTier: a CacheTier over an EntryStore (the disk tier, the SQLite
// tier) for one model and one KV geometry. Everything read back is decoded
// and checked (structure, checksum, fingerprint, key, geometry) before it is
// returned; a damaged entry is quarantined and read as a miss.
#pragma once

#include <atomic>
#include <memory>

#include "tier/cache_tier.h"
#include "tier/entry_store.h"
#include "tier/tier_usage.h"

namespace clm {

struct StoreTierCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;
};

class StoreTier final : public CacheTier, public TierUsage {
 public:
  StoreTier(std::unique_ptr<EntryStore> store, uint64_t model_fingerprint, const KvGeometry& geometry)
      : store_(std::move(store)), fingerprint_(model_fingerprint), geometry_(geometry) {}

  std::string name() const override { return store_->kind(); }
  std::size_t exists(std::span<const BlockKey> chain) override;
  const KvGeometry& geometry() const override { return geometry_; }
  std::optional<TierEntry> get_into(BlockKey key, std::span<std::byte> kv) override;
  // Refuses (false) an entry of another model or geometry, besides the
  // store's own refusals.
  bool put(const TierEntry& entry) override;
  void remove(BlockKey key) override;
  void set_removal_listener(TierRemovalListener listener) override {
    store_->set_removal_listener(std::move(listener));
  }
  uint64_t stored_bytes() override { return store_->stored_bytes(); }
  std::size_t quarantined_entries() override { return store_->quarantine_size(); }
  std::size_t set_size_cap(uint64_t max_bytes) override { return store_->set_max_bytes(max_bytes); }

  EntryStore& store() { return *store_; }
  StoreTierCounters counters() const { return {hits_.load(), misses_.load()}; }

 private:
  std::unique_ptr<EntryStore> store_;
  uint64_t fingerprint_;
  KvGeometry geometry_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace clm
