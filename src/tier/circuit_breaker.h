// CircuitBreaker: stops calling a remote store that has just failed. After
// an error or a timeout it opens for a cool-down, during which callers skip
// the store at once (a miss, a dropped write); then one caller is let
// through as a trial: its success closes the breaker, its failure opens it
// for another cool-down. So a dead or hung store costs at most one failed
// call per cool-down, never one per request. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace clm {

enum class BreakerState : uint8_t { Closed, Open, HalfOpen };

const char* breaker_state_name(BreakerState state);

class CircuitBreaker {
 public:
  // `clock`: seconds on a monotonic clock (replaceable in tests).
  explicit CircuitBreaker(double cooldown_s, std::function<double()> clock = {});

  // Whether a call may go ahead now. While open it refuses until the
  // cool-down ends; then it admits one trial call (half-open) and refuses
  // the others until that call reports.
  bool allow();
  void record_success();
  void record_failure();

  BreakerState state() const;
  uint64_t failures() const;   // calls that failed
  uint64_t skipped() const;    // calls refused while open
  uint64_t trips() const;      // times it opened

 private:
  double now() const { return clock_(); }

  const double cooldown_s_;
  std::function<double()> clock_;
  mutable std::mutex mu_;
  BreakerState state_ = BreakerState::Closed;
  double open_until_ = 0.0;
  uint64_t failures_ = 0, skipped_ = 0, trips_ = 0;
};

}  // namespace clm
