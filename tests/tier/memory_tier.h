// An in-memory CacheTier for the tests of what sits above the tiers (the
// writer, the tier set, adoption): entries in a map, with switches that
// make put() block until released, and counters of calls.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "support/tier_entries.h"
#include "tier/cache_tier.h"

namespace clm::test {

class MemoryTier : public CacheTier {
 public:
  explicit MemoryTier(std::string name = "memory", KvGeometry geometry = small_tier_geometry())
      : name_(std::move(name)), geometry_(geometry) {}
  std::string name() const override { return name_; }
  const KvGeometry& geometry() const override { return geometry_; }
  std::size_t exists(std::span<const BlockKey> chain) override {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    while (n < chain.size() && entries_.count(chain[n]) != 0) ++n;
    return n;
  }
  std::optional<TierEntry> get_into(BlockKey key, std::span<std::byte> kv) override {
    std::lock_guard lock(mu_);
    ++gets_;
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.kv.size() != kv.size()) return std::nullopt;
    TierEntry out = it->second;
    std::copy(out.kv.begin(), out.kv.end(), kv.begin());
    out.kv.clear();
    return out;
  }
  bool put(const TierEntry& entry) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !blocked_; });
    entries_[entry.key] = entry;
    return true;
  }
  void remove(BlockKey key) override {
    std::lock_guard lock(mu_);
    if (entries_.erase(key) != 0 && removal_listener_) removal_listener_(std::span<const BlockKey>(&key, 1));
  }
  void set_removal_listener(TierRemovalListener listener) override { removal_listener_ = std::move(listener); }
  void block_puts(bool blocked) {
    {
      std::lock_guard lock(mu_);
      blocked_ = blocked;
    }
    cv_.notify_all();
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }
  int gets() const {
    std::lock_guard lock(mu_);
    return gets_;
  }

 private:
  std::string name_;
  KvGeometry geometry_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<BlockKey, TierEntry> entries_;
  bool blocked_ = false;
  int gets_ = 0;
  TierRemovalListener removal_listener_;
};

}  // namespace clm::test
