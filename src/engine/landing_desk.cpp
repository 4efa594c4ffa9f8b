#include "engine/landing_desk.h"

namespace clm {

std::optional<std::vector<BlockId>> LandingDesk::ask(std::size_t n) {
  Ask request;
  request.wanted = n;
  {
    std::lock_guard lock(mu_);
    if (closed_) return std::nullopt;
    asks_.push_back(&request);
  }
  wake_();
  std::unique_lock lock(mu_);
  answered_.wait(lock, [&] { return request.answered; });
  if (request.refused) return std::nullopt;
  return std::move(request.granted);
}

void LandingDesk::hand_back(std::span<const BlockId> blocks) {
  if (blocks.empty()) return;
  {
    std::lock_guard lock(mu_);
    returned_.insert(returned_.end(), blocks.begin(), blocks.end());
  }
  wake_();
}

bool LandingDesk::has_work() const {
  std::lock_guard lock(mu_);
  return !asks_.empty() || !returned_.empty();
}

void LandingDesk::serve(KvCacheManager& cache) {
  std::vector<Ask*> asks;
  std::vector<BlockId> returned;
  {
    std::lock_guard lock(mu_);
    asks.swap(asks_);
    returned.swap(returned_);
  }
  for (BlockId id : returned) cache.return_landing(id);
  if (asks.empty()) return;
  // The pool is only touched here, outside the lock; the waiters are still
  // blocked in ask(), so the pointers hold.
  std::vector<std::vector<BlockId>> granted(asks.size());
  for (std::size_t r = 0; r < asks.size(); ++r)
    for (std::size_t i = 0; i < asks[r]->wanted; ++i) {
      const BlockId id = cache.reserve_landing();
      if (id == kNoBlock) break;  // the pool is full of referenced blocks: the rest lands in buffers
      granted[r].push_back(id);
    }
  {
    std::lock_guard lock(mu_);
    for (std::size_t r = 0; r < asks.size(); ++r) {
      asks[r]->granted = std::move(granted[r]);
      asks[r]->answered = true;
    }
  }
  answered_.notify_all();
}

void LandingDesk::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (Ask* a : asks_) a->answered = a->refused = true;
    asks_.clear();
  }
  answered_.notify_all();
}

}  // namespace clm
