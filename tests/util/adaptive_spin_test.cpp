#include "util/adaptive_spin.h"

#include <gtest/gtest.h>

namespace clm {
namespace {

TEST(AdaptiveSpin, StartsAtTheCeiling) {
  AdaptiveSpin spin;
  EXPECT_EQ(spin.budget(), AdaptiveSpin::kMaxPolls);
}

TEST(AdaptiveSpin, AnImmediateSuccessPollsOnce) {
  AdaptiveSpin spin;
  int polls = 0;
  EXPECT_TRUE(spin.poll([&] { return ++polls >= 1; }));
  EXPECT_EQ(polls, 1);
}

TEST(AdaptiveSpin, FailuresShrinkTheBudgetToTheFloorAndNoFurther) {
  AdaptiveSpin spin;
  int polls = 0;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(spin.poll([&] { ++polls; return false; }));
  EXPECT_EQ(spin.budget(), AdaptiveSpin::kMinPolls);
  // A failing poll at the floor still polls kMinPolls times (+1 final check).
  polls = 0;
  EXPECT_FALSE(spin.poll([&] { ++polls; return false; }));
  EXPECT_EQ(polls, AdaptiveSpin::kMinPolls + 1);
}

TEST(AdaptiveSpin, RecoversAfterALongRunOfFailures) {
  // A preempted partner makes every poll fail for a while; once it answers
  // within the budget again, polling must be trusted again, all the way up.
  AdaptiveSpin spin;
  for (int i = 0; i < 100; ++i) spin.poll([] { return false; });
  int successes = 0;
  while (spin.budget() < AdaptiveSpin::kMaxPolls && successes < 100) {
    int polls = 0;
    ASSERT_TRUE(spin.poll([&] { return ++polls == 3; }));  // answers on the third poll
    ++successes;
  }
  EXPECT_EQ(spin.budget(), AdaptiveSpin::kMaxPolls);
  EXPECT_LE(successes, 7);  // 64 -> 4096 by doublings
}

TEST(AdaptiveSpin, ALateSuccessCountsAsAFailure) {
  // done() turning true only after the budget ran out is reported (so the
  // caller need not block) but still halves the budget.
  AdaptiveSpin spin;
  int polls = 0;
  EXPECT_TRUE(spin.poll([&] { return ++polls > AdaptiveSpin::kMaxPolls; }));
  EXPECT_EQ(spin.budget(), AdaptiveSpin::kMaxPolls / 2);
}

}  // namespace
}  // namespace clm
