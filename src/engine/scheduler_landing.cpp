// Pool blocks for tier reads to land in: submit() reads a prompt's missing
// prefix blocks from the tiers on its own thread, straight into pool blocks,
// while only the stepping thread may touch the pool. So submit() posts a
// request and waits; the stepping thread reserves the blocks at the start of
// its next step and answers; submit() reads into them with no lock held.
// Blocks that end up unused (a failed read, a shorter chain) are handed back
// and freed at the next step. When no loop thread runs (a caller steps the
// scheduler itself), submit() reserves the blocks itself while no step runs
// (step_mu_). From a callback during a step nobody could answer: entries
// then land in their own buffers and are copied into blocks at adoption.
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"

namespace clm {

class Scheduler::SubmitLanding final : public KvLandingSource {
 public:
  explicit SubmitLanding(Scheduler& s) : s_(s) {
    std::lock_guard lock(s_.mu_);
    if (!s_.started_) mode_ = Mode::Inline;
    else if (!s_.stopping_ && s_.loop_.get_id() != std::this_thread::get_id()) mode_ = Mode::Loop;
  }
  ~SubmitLanding() override {
    unused_.insert(unused_.end(), held_.begin() + static_cast<std::ptrdiff_t>(next_), held_.end());
    if (unused_.empty()) return;
    if (mode_ == Mode::Inline) {
      std::unique_lock step(s_.step_mu_, std::try_to_lock);
      if (step) {
        for (BlockId id : unused_) s_.cache_.return_landing(id);
        return;
      }
    }
    s_.return_landings(unused_);
  }
  SubmitLanding(const SubmitLanding&) = delete;
  SubmitLanding& operator=(const SubmitLanding&) = delete;

  void reserve(std::size_t n) override {
    const std::size_t left = held_.size() - next_;
    if (mode_ == Mode::Staged || n <= left) return;
    if (mode_ == Mode::Inline) {
      // No loop: the pool is the stepping caller's, and no step runs while
      // this lock is held (a callback's submit during a step finds it taken).
      std::unique_lock step(s_.step_mu_, std::try_to_lock);
      if (!step) return;
      for (std::size_t i = left; i < n; ++i) {
        const BlockId id = s_.cache_.reserve_landing();
        if (id == kNoBlock) break;
        held_.push_back(id);
      }
      return;
    }
    LandingRequest request;
    request.wanted = n - left;
    {
      std::unique_lock lock(s_.mu_);
      // A stopping loop answers no more (refuse_landings ran or will run
      // before it ends, under this lock).
      if (s_.stopping_) {
        mode_ = Mode::Staged;
        return;
      }
      s_.landing_requests_.push_back(&request);
    }
    s_.wake_.notify_all();
    {
      std::unique_lock lock(s_.mu_);
      s_.landing_answered_.wait(lock, [&] { return request.answered; });
    }
    held_.insert(held_.end(), request.granted.begin(), request.granted.end());
  }

  std::optional<KvLanding> take() override {
    if (next_ == held_.size()) return std::nullopt;
    const BlockId id = held_[next_++];
    KvCacheManager& cache = s_.cache_;
    // The block's bytes only: its metadata stays with the stepping thread.
    return KvLanding{id, std::span<std::byte>(cache.pool().block_data(id), cache.pool().geometry().block_bytes())};
  }

  void give_back(BlockId block) override { unused_.push_back(block); }

 private:
  // Loop: the loop thread reserves; Inline: no loop, this thread reserves
  // between steps; Staged: entries land in their own buffers.
  enum class Mode { Loop, Inline, Staged };
  Scheduler& s_;
  Mode mode_ = Mode::Staged;
  std::vector<BlockId> held_;    // granted by the stepping thread
  std::size_t next_ = 0;         // held_[0, next_) were taken
  std::vector<BlockId> unused_;  // taken, then given back
};

std::vector<LandedEntry> Scheduler::fetch_promoted(const Request& request) {
  SubmitLanding landing(*this);  // hands back what the fetch leaves unused
  // Blocks wholly at or after the limit are of no use to the plan; the one
  // across it still gives the tokens before the limit (a partial copy).
  const std::span<const int32_t> prompt = request.prompt;
  const auto bs = static_cast<std::size_t>(cache_.pool().geometry().block_size);
  const auto limit = static_cast<std::size_t>(request.reuse_before());
  const std::size_t wanted = std::min(prompt.size(), (limit + bs - 1) / bs * bs);
  return options_.tiers->fetch(cache_.prompt_keys(prompt.first(wanted), request.cache_namespace), &landing);
}

void Scheduler::serve_landings() {
  std::vector<LandingRequest*> requests;
  std::vector<BlockId> returned;
  {
    std::lock_guard lock(mu_);
    requests.swap(landing_requests_);
    returned.swap(landings_returned_);
  }
  for (BlockId id : returned) cache_.return_landing(id);
  if (requests.empty()) return;
  // Each waiter stays blocked until answered below, so the pointers hold.
  std::vector<std::vector<BlockId>> granted(requests.size());
  for (std::size_t r = 0; r < requests.size(); ++r) {
    for (std::size_t i = 0; i < requests[r]->wanted; ++i) {
      const BlockId id = cache_.reserve_landing();
      if (id == kNoBlock) break;  // the pool is full of referenced blocks: the rest lands in buffers
      granted[r].push_back(id);
    }
  }
  {
    std::lock_guard lock(mu_);
    for (std::size_t r = 0; r < requests.size(); ++r) {
      requests[r]->granted = std::move(granted[r]);
      requests[r]->answered = true;
    }
  }
  landing_answered_.notify_all();
}

void Scheduler::refuse_landings() {
  {
    std::lock_guard lock(mu_);
    for (LandingRequest* r : landing_requests_) r->answered = true;
    landing_requests_.clear();
  }
  landing_answered_.notify_all();
}

void Scheduler::return_landings(std::span<const BlockId> blocks) {
  if (blocks.empty()) return;
  {
    std::lock_guard lock(mu_);
    landings_returned_.insert(landings_returned_.end(), blocks.begin(), blocks.end());
  }
  wake_.notify_all();
}

void Scheduler::drop_promoted(Sequence& seq) {
  for (const LandedEntry& e : seq.promoted)
    if (e.block != kNoBlock) cache_.return_landing(e.block);
  seq.promoted.clear();
}

}  // namespace clm
