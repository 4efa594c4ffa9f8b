// Pool blocks for tier reads to land in: submit() reads a prompt's missing
// prefix blocks from the tiers on its own thread, straight into pool blocks,
// while only the stepping thread may touch the pool. So submit() asks the
// landing desk (engine/landing_desk.h) and waits; the stepping thread
// reserves the blocks at the start of its next step and answers; submit()
// reads into them with no lock held. Blocks that end up unused (a failed
// read, a shorter chain) are handed back and freed at the next step. When no loop thread runs (a caller steps the
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
    s_.landings_.hand_back(unused_);
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
    auto granted = s_.landings_.ask(n - left);
    // A closed desk (the loop has ended) answers no more.
    if (!granted) {
      mode_ = Mode::Staged;
      return;
    }
    held_.insert(held_.end(), granted->begin(), granted->end());
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
  return deps_.tiers->fetch(cache_.prompt_keys(prompt.first(wanted), request.cache_namespace), &landing);
}

void Scheduler::drop_promoted(Sequence& seq) {
  for (const LandedEntry& e : seq.promoted)
    if (e.block != kNoBlock) cache_.return_landing(e.block);
  seq.promoted.clear();
}

}  // namespace clm
