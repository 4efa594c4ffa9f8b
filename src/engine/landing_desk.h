// LandingDesk: the handshake by which threads that read tier entries get
// pool blocks to read into. Only the stepping thread may touch the pool, so
// a submitting thread asks here and waits; the stepping thread serves every
// waiting ask at the start of its next step (reserving blocks, evicting idle
// cached ones if need be) and frees the blocks handed back unused. Once the
// stepping loop ends, the desk is closed: waiting and later asks get no
// blocks, and their entries land in buffers of their own. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "cache/kv_cache_manager.h"

namespace clm {

class LandingDesk {
 public:
  // wake: tells the stepping thread there is work (it must not miss a call
  // made just before it waits).
  explicit LandingDesk(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Submitting thread: up to n blocks (fewer when the pool has no more);
  // nullopt once the desk is closed.
  std::optional<std::vector<BlockId>> ask(std::size_t n);
  // Any thread: blocks that go back to the pool at the next step.
  void hand_back(std::span<const BlockId> blocks);

  // Stepping thread.
  bool has_work() const;
  void serve(KvCacheManager& cache);
  void close();

 private:
  struct Ask {
    std::size_t wanted = 0;
    std::vector<BlockId> granted;
    bool answered = false;
    bool refused = false;
  };
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable answered_;
  std::vector<Ask*> asks_;        // each waiter stays in ask() until answered
  std::vector<BlockId> returned_;
  bool closed_ = false;
};

}  // namespace clm
