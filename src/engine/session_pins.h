// SessionPins: keeps the stable prefix of live conversations resident. A
// session's pin holds the resident exact prefix blocks of its last turn (see
// KvCacheManager::hold_prefix) until it expires, is replaced by the session's
// next turn, is unpinned, or is given up to make room. Pinned blocks are
// bounded by a share of the pool: beyond it the least recently pinned
// session is unpinned (its blocks stay cached, evictable again), so that
// sessions can never starve live requests. Not thread-safe: the scheduler's
// stepping thread owns it, like the cache manager it drives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kv_cache_manager.h"

namespace clm {

struct SessionPinOptions {
  // Most of the pool's blocks pins may hold, as a share in [0, 1]; 0 turns
  // pinning off.
  double max_share = 0.5;
  // Seconds on a monotonic clock (default steady_clock); replaceable in tests.
  std::function<double()> clock;
};

// How a pin that is dropped on request ends: plainly unpinned (the session
// was deleted or displaced), or lapsed at the session timeout, which the
// pins' own clock would have done a moment later and counts as expired.
enum class PinEnd { Unpinned, Lapsed };

struct SessionPinStats {
  std::size_t sessions = 0;        // sessions holding at least one block
  std::size_t blocks = 0;          // distinct blocks held by them
  uint64_t expired = 0;            // pins dropped at their timeout
  uint64_t released_for_room = 0;  // pins given up: the share bound, or a request needing the room
};

class SessionPins {
 public:
  SessionPins(KvCacheManager& cache, SessionPinOptions options = {});
  ~SessionPins();  // releases every pin
  SessionPins(const SessionPins&) = delete;
  SessionPins& operator=(const SessionPins&) = delete;

  // Pins the resident prefix of `tokens` for session `id` for hold_s seconds,
  // then drops the session's previous pin (blocks both share stay held).
  void pin(const std::string& id, std::span<const int32_t> tokens, uint64_t cache_namespace, double hold_s);
  // Drops the session's pin; a Lapsed end counts it as expired.
  void unpin(const std::string& id, PinEnd end = PinEnd::Unpinned);
  // Drops the pins whose time is up; returns how many.
  std::size_t expire();
  // Drops the least recently pinned session's pin, to make room; false when
  // there is none.
  bool release_oldest();
  void clear();
  // When the next pin expires; nullopt without pins.
  std::optional<double> next_deadline() const;
  // The clock pins are timed by.
  double now() const;
  SessionPinStats stats() const;
  // Blocks the share bound allows.
  std::size_t max_blocks() const { return max_blocks_; }

 private:
  struct Pin {
    std::vector<BlockId> blocks;
    double pinned_at = 0.0;
    double deadline = 0.0;
  };
  void hold(const std::vector<BlockId>& blocks);
  void drop(Pin& pin);
  void erase(std::unordered_map<std::string, Pin>::iterator it);

  KvCacheManager& cache_;
  SessionPinOptions options_;
  std::size_t max_blocks_;
  std::unordered_map<std::string, Pin> pins_;
  std::unordered_map<BlockId, int> holders_;  // block -> pins holding it
  SessionPinStats counters_;
};

}  // namespace clm
