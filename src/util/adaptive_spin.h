// Bounded polling before a thread blocks, with a budget that adapts like an
// adaptive mutex: it doubles when polling paid off and halves when it did
// not, between a floor and a ceiling. On an idle machine the other side of a
// hand-off answers within the gap between two loops of a forward pass and a
// poll beats a futex wake-up; on an oversubscribed one the thread we wait
// for may be queued behind us on this very core, polls keep failing and the
// budget shrinks to the floor. The floor matters: a budget that could reach
// zero would never see a success again and stay at zero for good, turning
// every later hand-off into a sleep and a wake-up.
#pragma once

#include <algorithm>

namespace clm {

class AdaptiveSpin {
 public:
  // About 1 us and 80 us of polling on a current x86 core (a pause each).
  static constexpr int kMinPolls = 64;
  static constexpr int kMaxPolls = 4096;

  int budget() const { return budget_; }

  // Polls done() up to budget() times and reports whether it held; the
  // caller blocks when it did not.
  template <class Pred>
  bool poll(Pred done) {
    for (int i = 0; i < budget_; ++i) {
      if (done()) {
        budget_ = std::min(kMaxPolls, 2 * budget_);
        return true;
      }
      relax();
    }
    budget_ = std::max(kMinPolls, budget_ / 2);
    return done();
  }

 private:
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  int budget_ = kMaxPolls;
};

}  // namespace clm
