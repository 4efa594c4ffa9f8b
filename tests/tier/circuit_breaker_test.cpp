#include "tier/circuit_breaker.h"

#include <gtest/gtest.h>

namespace clm {
namespace {

TEST(CircuitBreaker, OpensOnFailureAndAdmitsOneTrialAfterTheCooldown) {
  double now = 100.0;
  CircuitBreaker b(5.0, [&] { return now; });
  EXPECT_EQ(b.state(), BreakerState::Closed);
  EXPECT_TRUE(b.allow());
  b.record_failure();
  EXPECT_EQ(b.state(), BreakerState::Open);
  EXPECT_FALSE(b.allow());
  now += 4.9;
  EXPECT_FALSE(b.allow());
  EXPECT_EQ(b.skipped(), 2u);
  now += 0.2;
  EXPECT_TRUE(b.allow());  // the trial
  EXPECT_EQ(b.state(), BreakerState::HalfOpen);
  EXPECT_FALSE(b.allow()) << "one trial at a time";
  b.record_failure();      // the trial failed: another cool-down
  EXPECT_EQ(b.state(), BreakerState::Open);
  EXPECT_FALSE(b.allow());
  now += 5.1;
  EXPECT_TRUE(b.allow());
  b.record_success();
  EXPECT_EQ(b.state(), BreakerState::Closed);
  EXPECT_TRUE(b.allow());
  EXPECT_EQ(b.failures(), 2u);
  EXPECT_EQ(b.trips(), 2u);
}

TEST(CircuitBreaker, StateNames) {
  EXPECT_STREQ(breaker_state_name(BreakerState::Closed), "closed");
  EXPECT_STREQ(breaker_state_name(BreakerState::Open), "open");
  EXPECT_STREQ(breaker_state_name(BreakerState::HalfOpen), "half_open");
}

}  // namespace
}  // namespace clm
