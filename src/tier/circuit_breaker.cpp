#include "tier/circuit_breaker.h"

#include <chrono>

namespace clm {

const char* breaker_state_name(BreakerState state) {
  switch (state) {
    case BreakerState::Closed: return "closed";
    case BreakerState::Open: return "open";
    case BreakerState::HalfOpen: return "half_open";
  }
  return "unknown";
}

CircuitBreaker::CircuitBreaker(double cooldown_s, std::function<double()> clock)
    : cooldown_s_(cooldown_s), clock_(std::move(clock)) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
}

bool CircuitBreaker::allow() {
  std::lock_guard lock(mu_);
  switch (state_) {
    case BreakerState::Closed: return true;
    case BreakerState::Open:
      if (now() >= open_until_) {
        state_ = BreakerState::HalfOpen;  // this caller is the trial
        return true;
      }
      ++skipped_;
      return false;
    case BreakerState::HalfOpen:  // a trial is under way: wait for its verdict
      ++skipped_;
      return false;
  }
  return false;
}

void CircuitBreaker::record_success() {
  std::lock_guard lock(mu_);
  state_ = BreakerState::Closed;
}

void CircuitBreaker::record_failure() {
  std::lock_guard lock(mu_);
  ++failures_;
  if (state_ != BreakerState::Open) ++trips_;
  state_ = BreakerState::Open;
  open_until_ = now() + cooldown_s_;
}

BreakerState CircuitBreaker::state() const {
  std::lock_guard lock(mu_);
  return state_;
}
uint64_t CircuitBreaker::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}
uint64_t CircuitBreaker::skipped() const {
  std::lock_guard lock(mu_);
  return skipped_;
}
uint64_t CircuitBreaker::trips() const {
  std::lock_guard lock(mu_);
  return trips_;
}

}  // namespace clm
