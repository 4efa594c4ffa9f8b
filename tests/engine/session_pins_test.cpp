// SessionPins over a tiny pool without a model: a pinned conversation's
// blocks survive pressure that evicts an unpinned chain, the pool share
// bound gives way oldest first, pins expire on time, and a new turn replaces
// the previous one's pin.
#include "engine/session_pins.h"

#include <gtest/gtest.h>

#include "cache/cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;

class SessionPinsTest : public ::testing::Test {
 protected:
  // 16 blocks of 4 tokens; pins may hold half of them.
  SessionPinsTest() : h_(16), pins_(h_.cache(), {0.5, [this] { return h_.now; }}) {}

  // A finished request: its blocks are cached and idle.
  void compute(const std::vector<int32_t>& tokens) {
    CachedSequence seq(kBlockSize);
    ASSERT_GE(h_.run(seq, tokens), 0);
    h_.cache().release(seq);
  }
  // Whole blocks of `tokens` a new prompt continuing it would find resident.
  int resident(std::vector<int32_t> tokens) {
    tokens.push_back(9999);
    return h_.cache().match_prefix(tokens, 0);
  }

  CacheHarness h_;
  SessionPins pins_;
};

TEST_F(SessionPinsTest, APinnedChainSurvivesPressureThatEvictsAnUnpinnedOne) {
  const auto pinned = iota_tokens(1, 16), unpinned = iota_tokens(100, 16);
  compute(pinned);
  compute(unpinned);
  pins_.pin("a", pinned, 0, 60);
  EXPECT_EQ(pins_.stats().sessions, 1u);
  EXPECT_EQ(pins_.stats().blocks, 4u);
  EXPECT_EQ(h_.cache().available_blocks(), 12u);
  // A request taking every block it can: the unpinned chain is evicted.
  compute(iota_tokens(500, 12 * kBlockSize));
  EXPECT_EQ(resident(pinned), 16);
  EXPECT_EQ(resident(unpinned), 0);
  pins_.unpin("a");
  EXPECT_EQ(pins_.stats().blocks, 0u);
  EXPECT_EQ(h_.cache().available_blocks(), 16u);
  EXPECT_EQ(resident(pinned), 16);  // still cached, evictable again
}

TEST_F(SessionPinsTest, TheShareBoundUnpinsTheOldestSession) {
  EXPECT_EQ(pins_.max_blocks(), 8u);
  const auto a = iota_tokens(1, 16), b = iota_tokens(100, 16), c = iota_tokens(200, 16);
  for (const auto* t : {&a, &b, &c}) compute(*t);
  pins_.pin("a", a, 0, 60);
  h_.now = 1;
  pins_.pin("b", b, 0, 60);
  EXPECT_EQ(pins_.stats().blocks, 8u);
  h_.now = 2;
  pins_.pin("c", c, 0, 60);
  const SessionPinStats s = pins_.stats();
  EXPECT_EQ(s.sessions, 2u);
  EXPECT_EQ(s.blocks, 8u);
  EXPECT_EQ(s.released_for_room, 1u);
  EXPECT_EQ(h_.cache().available_blocks(), 8u);
  // "a" went: its blocks are evictable, b's and c's are not.
  compute(iota_tokens(500, 8 * kBlockSize));
  EXPECT_EQ(resident(a), 0);
  EXPECT_EQ(resident(b), 16);
  EXPECT_EQ(resident(c), 16);
}

TEST_F(SessionPinsTest, OneSessionAlonePinsNoMoreThanTheShare) {
  const auto long_turn = iota_tokens(1, 12 * kBlockSize);
  compute(long_turn);
  pins_.pin("a", long_turn, 0, 60);
  EXPECT_EQ(pins_.stats().blocks, 8u);
  EXPECT_EQ(h_.cache().available_blocks(), 8u);
}

TEST_F(SessionPinsTest, SessionsSharingAPrefixCountItsBlocksOnce) {
  auto a = iota_tokens(1, 16), b = iota_tokens(1, 8);
  for (int32_t t : iota_tokens(300, 8)) b.push_back(t);
  compute(a);
  compute(b);
  pins_.pin("a", a, 0, 60);
  pins_.pin("b", b, 0, 60);
  EXPECT_EQ(pins_.stats().sessions, 2u);
  EXPECT_EQ(pins_.stats().blocks, 6u);
  EXPECT_EQ(h_.cache().available_blocks(), 10u);
}

TEST_F(SessionPinsTest, PinsExpireOnTime) {
  const auto t = iota_tokens(1, 16);
  compute(t);
  pins_.pin("a", t, 0, 10);
  ASSERT_TRUE(pins_.next_deadline());
  EXPECT_EQ(*pins_.next_deadline(), 10.0);
  h_.now = 9.5;
  EXPECT_EQ(pins_.expire(), 0u);
  EXPECT_EQ(pins_.stats().blocks, 4u);
  h_.now = 10.5;
  EXPECT_EQ(pins_.expire(), 1u);
  EXPECT_EQ(pins_.stats().sessions, 0u);
  EXPECT_EQ(pins_.stats().expired, 1u);
  EXPECT_FALSE(pins_.next_deadline());
  EXPECT_EQ(h_.cache().available_blocks(), 16u);
}

// The session store may time a session out a moment before the pins' own
// clock does (any sweep of the store notices first): that unpin is the same
// lapse and counts as expired; a plain unpin (a deleted or displaced
// session) does not.
TEST_F(SessionPinsTest, AnUnpinAtTheSessionTimeoutCountsAsExpired) {
  const auto a = iota_tokens(1, 16), b = iota_tokens(100, 16);
  compute(a);
  compute(b);
  pins_.pin("a", a, 0, 10);
  pins_.pin("b", b, 0, 10);
  ASSERT_EQ(pins_.stats().sessions, 2u);
  h_.now = 9.99;
  pins_.unpin("a", PinEnd::Lapsed);
  EXPECT_EQ(pins_.stats().expired, 1u);
  pins_.unpin("b");
  EXPECT_EQ(pins_.stats().expired, 1u);
  EXPECT_EQ(pins_.stats().sessions, 0u);
  pins_.unpin("a", PinEnd::Lapsed);  // no pin left: nothing to count
  EXPECT_EQ(pins_.stats().expired, 1u);
  EXPECT_EQ(h_.cache().available_blocks(), 16u);
}

TEST_F(SessionPinsTest, TheNextTurnReplacesThePin) {
  const auto turn1 = iota_tokens(1, 8);
  auto turn2 = turn1;
  for (int32_t t : iota_tokens(50, 8)) turn2.push_back(t);
  compute(turn2);
  pins_.pin("a", turn1, 0, 60);
  const BlockId first = h_.cache().hold_prefix(turn1, 0, 1).at(0);
  h_.cache().release_held(std::vector<BlockId>{first});
  EXPECT_EQ(h_.pool().refcount(first), 1);
  h_.now = 5;
  pins_.pin("a", turn2, 0, 60);
  EXPECT_EQ(pins_.stats().sessions, 1u);
  EXPECT_EQ(pins_.stats().blocks, 4u);
  EXPECT_EQ(h_.pool().refcount(first), 1);  // held once, by the new pin
  EXPECT_EQ(*pins_.next_deadline(), 65.0);
  // A turn that is not resident at all leaves the session unpinned.
  pins_.pin("a", iota_tokens(700, 8), 0, 60);
  EXPECT_EQ(pins_.stats().sessions, 0u);
  EXPECT_EQ(h_.cache().available_blocks(), 16u);
}

TEST_F(SessionPinsTest, ReleaseOldestAndClearGiveEveryBlockBack) {
  const auto a = iota_tokens(1, 8), b = iota_tokens(100, 8);
  compute(a);
  compute(b);
  pins_.pin("a", a, 0, 60);
  h_.now = 1;
  pins_.pin("b", b, 0, 60);
  ASSERT_TRUE(pins_.release_oldest());
  EXPECT_EQ(pins_.stats().sessions, 1u);
  EXPECT_EQ(resident(b), 8);
  pins_.clear();
  EXPECT_FALSE(pins_.release_oldest());
  EXPECT_EQ(h_.cache().available_blocks(), 16u);
}

TEST(SessionPinsShare, ZeroShareOrZeroTimeoutPinsNothing) {
  CacheHarness h(8);
  CachedSequence seq(kBlockSize);
  const auto t = iota_tokens(1, 8);
  ASSERT_GE(h.run(seq, t), 0);
  h.cache().release(seq);
  SessionPins off(h.cache(), {0.0, [&] { return h.now; }});
  off.pin("a", t, 0, 60);
  EXPECT_EQ(off.stats().sessions, 0u);
  SessionPins on(h.cache(), {1.0, [&] { return h.now; }});
  on.pin("a", t, 0, 0);
  EXPECT_EQ(on.stats().sessions, 0u);
  EXPECT_EQ(h.cache().available_blocks(), 8u);
}

}  // namespace
}  // namespace clm
