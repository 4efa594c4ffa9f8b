// TierWriter: the background thread that stores entries in the tiers below
// RAM, so that no tier I/O runs on the scheduler's thread. Its queue is
// bounded in bytes; an entry that does not fit is dropped and counted, and
// enqueue never waits. Every entry goes to every tier, in order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/kv_event.h"
#include "tier/cache_tier.h"

namespace clm {

struct TierWriteCounts {
  uint64_t written = 0;  // put() accepted
  uint64_t refused = 0;  // put() refused (no space, tier unavailable)
};

class TierWriter {
 public:
  // events: told of every entry a tier accepted (medium: the tier's name);
  // null: nobody listens.
  TierWriter(std::vector<CacheTier*> tiers, std::size_t capacity_bytes, KvEventSink* events = nullptr);
  // Writes what is queued, then stops.
  ~TierWriter();
  TierWriter(const TierWriter&) = delete;
  TierWriter& operator=(const TierWriter&) = delete;

  // Whether an entry of this size would be queued now (so that a caller
  // can skip building one that would be dropped).
  bool has_room(std::size_t kv_bytes, std::size_t n_tokens) const;
  // Queues the entry for the first `n_tiers` tiers (all by default); false
  // (counted as dropped) when the queue is full.
  bool enqueue(TierEntry entry, std::size_t n_tiers = SIZE_MAX);
  // Counts a write dropped before it was built (has_room said no).
  void count_dropped();
  // Waits until everything queued before the call has been written.
  void flush();

  uint64_t queued() const;
  uint64_t dropped() const;
  std::size_t pending() const;  // entries waiting or being written
  std::vector<TierWriteCounts> counts() const;  // per tier, in order

 private:
  // What an entry weighs in the queue: its bytes and its metadata.
  static std::size_t weight(std::size_t kv_bytes, std::size_t n_tokens) { return kv_bytes + 8 * n_tokens + 64; }
  static std::size_t bytes_of(const TierEntry& e) { return weight(e.kv.size(), e.tokens.size()); }
  void run();

  void announce_stored(const TierEntry& entry, const std::vector<bool>& ok) const;

  std::vector<CacheTier*> tiers_;
  const std::size_t capacity_bytes_;
  KvEventSink* events_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  struct Job {
    TierEntry entry;
    std::size_t n_tiers;  // written to tiers_[0, n_tiers)
  };
  std::deque<Job> queue_;
  std::size_t queued_bytes_ = 0;
  bool busy_ = false;  // an entry taken off the queue is being written
  bool stopping_ = false;
  uint64_t queued_ = 0, dropped_ = 0;
  std::vector<TierWriteCounts> counts_;
  std::thread thread_;
};

}  // namespace clm
