// The eviction policy alone, without a model: statistics are made up per
// block, so each rule is seen in isolation.
#include "engine/evict_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clm {
namespace {

constexpr int kBlock = 4;

EvictOptions small_options(EvictKind kind) {
  EvictOptions o;
  o.kind = kind;
  o.block_tokens = kBlock;
  o.aggregate_every = 8;
  o.recent_tokens = kBlock;  // the last block only
  o.protect_patterns = {};
  o.window_scale = 0.0;  // the window stays recent_tokens whatever the budget (tests below widen it)
  return o;
}

EvictPolicy make(const EvictOptions& o) {
  auto p = EvictPolicy::create(o);
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return std::move(*p);
}

std::vector<std::string> pieces(int n, const std::string& piece = " w") { return std::vector<std::string>(n, piece); }

// Statistics over n_tokens slots where every slot of block b received
// block_mass[b] per query and was seen by queries[b] queries.
struct Stats {
  std::vector<float> mass;
  std::vector<uint32_t> queries;
  Stats(int n_tokens, const std::vector<double>& per_query, const std::vector<uint32_t>& seen) {
    for (int s = 0; s < n_tokens; ++s) {
      const std::size_t b = static_cast<std::size_t>(s / kBlock);
      queries.push_back(seen[b]);
      mass.push_back(static_cast<float>(per_query[b] * seen[b]));
    }
  }
  Stats(int n_tokens, const std::vector<double>& per_query)
      : Stats(n_tokens, per_query, std::vector<uint32_t>(per_query.size(), 10)) {}
};

std::vector<int> evicted_blocks(const std::vector<EvictedBlock>& e) {
  std::vector<int> out;
  for (const auto& b : e) out.push_back(b.block);
  return out;
}

TEST(EvictPolicy, CandidatesAreTheBlocksUnderAFractionOfTheMeanQueuedLowestFirst) {
  EvictPolicy p = make(small_options(EvictKind::Attention));
  p.append(pieces(24));  // 6 blocks
  // Mean of the six is 1.0: blocks under 0.3 are candidates.
  Stats st(24, {2.0, 0.2, 1.5, 0.05, 0.25, 2.0});
  p.aggregate(st.mass, st.queries);
  EXPECT_EQ(p.candidates(), (std::vector<int>{3, 1, 4}));
  EXPECT_EQ(p.status(3), BlockStatus::Candidate);
  EXPECT_EQ(p.status(2), BlockStatus::Evictable);
  EXPECT_EQ(evicted_blocks(p.reclaim_candidates(2)), (std::vector<int>{3, 1}));
  EXPECT_EQ(evicted_blocks(p.reclaim_candidates(5)), (std::vector<int>{4}));
  EXPECT_TRUE(p.reclaim_candidates(5).empty());
  EXPECT_EQ(p.live_tokens(), 24 - 3 * kBlock);
  // The statistics were consumed.
  for (float m : st.mass) EXPECT_EQ(m, 0.0f);
  for (uint32_t q : st.queries) EXPECT_EQ(q, 0u);
}

TEST(EvictPolicy, NothingIsEvictedUnlessOverBudgetOrAskedUnderPressure) {
  EvictPolicy p = make(small_options(EvictKind::Attention));
  p.append(pieces(24));
  Stats st(24, {2.0, 0.2, 1.5, 0.05, 0.25, 2.0});
  p.aggregate(st.mass, st.queries);
  EXPECT_EQ(p.live_tokens(), 24);
  EXPECT_TRUE(p.fit_budget(24).empty());
  EXPECT_TRUE(p.fit_budget(100).empty());
  EXPECT_EQ(p.live_tokens(), 24);
  // Over budget by one token: one whole block goes, the lowest.
  EXPECT_EQ(evicted_blocks(p.fit_budget(23)), (std::vector<int>{3}));
  EXPECT_EQ(p.live_tokens(), 20);
  EXPECT_TRUE(p.evicted_slot(13));
  EXPECT_FALSE(p.evicted_slot(16));
}

TEST(EvictPolicy, OverBudgetGoesPastTheCandidatesLowestFirstButNeverTakesSinksOrRecent) {
  EvictPolicy p = make(small_options(EvictKind::Attention));
  p.append(pieces(24));
  // Block 0 (the sink) has the least mass; block 5 is the recent window.
  Stats st(24, {0.01, 0.9, 1.5, 0.8, 1.2, 0.02});
  p.aggregate(st.mass, st.queries);
  EXPECT_TRUE(p.candidates().empty());  // 0 and 5 are under the threshold but never evicted
  EXPECT_EQ(p.status(0), BlockStatus::Sink);
  EXPECT_EQ(p.status(5), BlockStatus::Recent);
  const auto gone = p.fit_budget(0);
  // Block 2 was this aggregation's top block (top 5% of 6 blocks: one), so it stays too.
  EXPECT_EQ(evicted_blocks(gone), (std::vector<int>{3, 1, 4}));
  EXPECT_EQ(p.status(2), BlockStatus::Top);
  EXPECT_EQ(p.live_tokens(), 3 * kBlock);
  for (const auto& e : gone) EXPECT_FALSE(e.was_candidate);
}

TEST(EvictPolicy, ATopBlockStaysProtectedForTheLastThreeAggregations) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.decay = 0.0;  // the score is the last aggregation's, so only the top rule keeps block 1
  EvictPolicy p = make(o);
  p.append(pieces(24));
  Stats first(24, {1.0, 9.0, 1.0, 1.0, 1.0, 1.0});
  p.aggregate(first.mass, first.queries);
  EXPECT_EQ(p.status(1), BlockStatus::Top);
  for (int round = 0; round < 2; ++round) {
    Stats low(24, {1.0, 0.01, 1.0, 2.0, 1.0, 1.0});
    p.aggregate(low.mass, low.queries);
    EXPECT_EQ(p.status(1), BlockStatus::Top) << "aggregation " << round + 2;
    EXPECT_TRUE(p.candidates().empty()) << "block 1 is under the threshold but protected";
  }
  EXPECT_EQ(p.status(1), BlockStatus::Top);
  // A fourth aggregation: the first has left the window of three.
  Stats low(24, {1.0, 0.01, 1.0, 2.0, 1.0, 1.0});
  p.aggregate(low.mass, low.queries);
  EXPECT_EQ(p.status(1), BlockStatus::Candidate);
}

TEST(EvictPolicy, ProtectRulesKeepTheBlocksTheirMatchesTouch) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.protect_patterns = default_protect_patterns();
  EvictPolicy p = make(o);
  // Block 1 holds an order number, block 3 a name inside a sentence; both
  // get the least mass. Block 2 starts with a capitalised word after a
  // full stop: not a name.
  std::vector<std::string> text = {"the", " cat", " sat", " down",      " order", " OR", "D-", "1234",
                                   ".",   " The", " dog", " ran",       " away",  " with", " Tim", " and",
                                   " a",  " big", " red", " ball",      " to",    " the", " park", "."};
  p.append(text);
  Stats st(24, {1.0, 0.01, 0.02, 0.01, 1.0, 1.0});
  p.aggregate(st.mass, st.queries);
  EXPECT_EQ(p.status(1), BlockStatus::Protected);
  EXPECT_EQ(p.status(3), BlockStatus::Protected);
  EXPECT_EQ(p.status(2), BlockStatus::Candidate);
  // A budget that leaves room for both protected blocks (they may fill it all).
  p = make([&] { EvictOptions all = o; all.protect_share = 1.0; return all; }());
  p.append(text);
  Stats again(24, {1.0, 0.01, 0.02, 0.01, 1.0, 1.0});
  p.aggregate(again.mass, again.queries);
  EXPECT_EQ(evicted_blocks(p.fit_budget(16)), (std::vector<int>{2, 4}));
  EXPECT_EQ(p.status(1), BlockStatus::Protected);
  EXPECT_EQ(p.status(3), BlockStatus::Protected);

  // A digit alone is a number.
  EvictPolicy q = make(o);
  q.append(std::vector<std::string>{"a", " b", " c", " d", " e", " 7", " g", " h", " i", " j", " k", " l"});
  Stats st2(12, {1.0, 0.001, 1.0});
  q.aggregate(st2.mass, st2.queries);
  EXPECT_EQ(q.status(1), BlockStatus::Protected);
}

// Eight blocks of four pieces; blocks 1, 2 and 3 each hold a distinct number.
std::vector<std::string> numbered_text() {
  std::vector<std::string> text = pieces(32);
  text[5] = " 11";
  text[10] = " 22";
  text[15] = " 33";
  return text;
}

TEST(EvictPolicy, OverBudgetProtectionYieldsBeyondItsShareLowestScoredFirst) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.protect_patterns = default_protect_patterns();
  o.top_share = 0.0;
  // Protected blocks 1, 2, 3 score 0.5, 0.01 and 0.3.
  const std::vector<double> scores = {1.0, 0.5, 0.01, 0.3, 1.0, 1.0, 1.0, 1.0};
  struct Want {
    double share;
    std::vector<int> evicted;
  };
  // Budget 16: a share of 0.5 leaves room for two protected blocks (8
  // tokens), so block 2, the lowest, yields and goes first, as a candidate;
  // a share of 0.25 leaves room for one, so block 3 yields too and goes
  // before the unprotected blocks that score more.
  for (const Want& w : {Want{0.5, {2, 4, 5, 6}}, Want{0.25, {2, 3, 4, 5}}}) {
    SCOPED_TRACE(w.share);
    o.protect_share = w.share;
    EvictPolicy p = make(o);
    p.append(numbered_text());
    Stats st(32, scores);
    p.aggregate(st.mass, st.queries);
    for (int b : {1, 2, 3}) EXPECT_EQ(p.status(b), BlockStatus::Protected) << b;
    EXPECT_TRUE(p.candidates().empty());
    const auto gone = p.fit_budget(16);
    EXPECT_EQ(evicted_blocks(gone), w.evicted);
    EXPECT_TRUE(gone[0].was_candidate);
    EXPECT_EQ(p.live_tokens(), 16);
    EXPECT_EQ(p.status(1), BlockStatus::Protected);
  }
}

TEST(EvictPolicy, WithinBudgetProtectionDoesNotYield) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.protect_patterns = default_protect_patterns();
  o.protect_share = 0.0;
  o.top_share = 0.0;
  EvictPolicy p = make(o);
  p.append(numbered_text());
  Stats st(32, {1.0, 0.5, 0.01, 0.3, 1.0, 1.0, 1.0, 1.0});
  p.aggregate(st.mass, st.queries);
  EXPECT_TRUE(p.fit_budget(32).empty());
  for (int b : {1, 2, 3}) EXPECT_EQ(p.status(b), BlockStatus::Protected) << b;
}

TEST(EvictPolicy, ARecurringNameOrNumberIsProtectedAtItsFirstOccurrenceOnly) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.protect_patterns = default_protect_patterns();
  o.protect_share = 1.0;
  o.top_share = 0.0;
  // "Rex" is named inside a sentence in blocks 1 and 3, "42" appears in
  // blocks 2 and 4, "Tim" starts a sentence in block 5 (not a name by the
  // rule: it could be any capitalised first word).
  const std::vector<std::string> text = {
      " a",  " b",   " c",     " d",   " a",   " dog",  " named", " Rex", " the", " door", " said", " 42",
      " so", " saw", " Rex",   " run", " a",   " 42",   " cats",  " ran", " x",   ".",     " Tim",  " ran",
      " a",  " b",   " c",     " d",   " a",   " b",    " c",     " d"};
  for (bool first_only : {true, false}) {
    SCOPED_TRACE(first_only);
    o.protect_first_only = first_only;
    EvictPolicy p = make(o);
    p.append(text);
    Stats st(32, std::vector<double>(8, 1.0));
    p.aggregate(st.mass, st.queries);
    EXPECT_EQ(p.status(1), BlockStatus::Protected);
    EXPECT_EQ(p.status(2), BlockStatus::Protected);
    const BlockStatus repeat = first_only ? BlockStatus::Evictable : BlockStatus::Protected;
    EXPECT_EQ(p.status(3), repeat);
    EXPECT_EQ(p.status(4), repeat);
    EXPECT_EQ(p.status(5), BlockStatus::Evictable);
  }
}

// Ten blocks of four; the last tokens' blocks 7 and 8 score lowest.
const std::vector<double> kRecentScoreLow = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.01, 0.02, 1.0};

TEST(EvictPolicy, TheSmallerTheBudgetTheWiderTheRecentWindow) {
  // Budget 20 of 40 tokens: half is forgotten, so the window covers at
  // least 1.0 x 0.5 x 20 = 10 tokens (blocks 7, 8 and 9), more than
  // recent_tokens (4). Without the widening, 7 and 8 score lowest and go.
  for (double scale : {1.0, 0.0}) {
    SCOPED_TRACE(scale);
    EvictOptions o = small_options(EvictKind::Attention);
    o.top_share = 0.0;
    o.window_scale = scale;
    EvictPolicy p = make(o);
    p.append(pieces(40));
    Stats st(40, kRecentScoreLow);
    p.aggregate(st.mass, st.queries);
    const auto gone = evicted_blocks(p.fit_budget(20));
    EXPECT_EQ(p.live_tokens(), 20);
    if (scale > 0.0) {
      EXPECT_EQ(gone, (std::vector<int>{1, 2, 3, 4, 5}));
      for (int b : {7, 8, 9}) EXPECT_EQ(p.status(b), BlockStatus::Recent) << b;
    } else {
      EXPECT_EQ(gone, (std::vector<int>{7, 8, 1, 2, 3}));
      EXPECT_EQ(p.status(6), BlockStatus::Evictable);
    }
  }
}

TEST(EvictPolicy, TheWidenedWindowLeavesTheSinksRoomInTheBudget) {
  // A scale so large that the window would cover everything: it stops where
  // the sinks and the blocks it touches fill the budget (12 tokens: the
  // sink and blocks 8 and 9), and the sequence gets within its budget.
  EvictOptions o = small_options(EvictKind::Attention);
  o.top_share = 0.0;
  o.window_scale = 100.0;
  EvictPolicy p = make(o);
  p.append(pieces(40));
  Stats st(40, kRecentScoreLow);
  p.aggregate(st.mass, st.queries);
  p.fit_budget(12);
  EXPECT_EQ(p.live_tokens(), 12);
  EXPECT_EQ(p.status(0), BlockStatus::Sink);
  EXPECT_EQ(p.status(8), BlockStatus::Recent);
  EXPECT_EQ(p.status(9), BlockStatus::Recent);
}

TEST(EvictPolicy, TopBlocksYieldToTheWidenedWindowWhenBothDoNotFit) {
  // Budget 19 of 40: the window covers the last 9 tokens (blocks 7, 8 and
  // 9); with the sink and block 3, the top block, that is 20 tokens, over
  // the budget. The top block yields, the window stays, and the sequence
  // gets within its budget. Without the widening (scale 0) it stays.
  for (double scale : {1.0, 0.0}) {
    SCOPED_TRACE(scale);
    EvictOptions o = small_options(EvictKind::Attention);
    o.window_scale = scale;
    EvictPolicy p = make(o);
    p.append(pieces(40));
    Stats st(40, {1.0, 2.0, 3.0, 9.0, 5.0, 6.0, 7.0, 0.01, 0.02, 1.0});
    p.aggregate(st.mass, st.queries);
    EXPECT_EQ(p.status(3), BlockStatus::Top);
    p.fit_budget(19);
    EXPECT_LE(p.live_tokens(), 19);
    if (scale > 0.0) {
      EXPECT_EQ(p.status(3), BlockStatus::Evicted);
      EXPECT_EQ(p.status(7), BlockStatus::Recent);
    } else {
      EXPECT_EQ(p.status(3), BlockStatus::Top);
      EXPECT_EQ(p.status(7), BlockStatus::Evicted);
    }
  }
}

TEST(EvictPolicy, ProtectionYieldsToTheSinksAndTheWindowWhenTheyFillTheBudget) {
  // Numbers in blocks 1, 2 and 3 (scores 0.5, 0.01, 0.3); protection may
  // hold the whole budget (share 1), but the sink and the widened window
  // (blocks 7, 8, 9) hold 16 of the 20 tokens: only the best-scored
  // protected block stays, and the sequence gets within its budget.
  EvictOptions o = small_options(EvictKind::Attention);
  o.protect_patterns = default_protect_patterns();
  o.protect_share = 1.0;
  o.top_share = 0.0;
  o.window_scale = 1.0;
  EvictPolicy p = make(o);
  std::vector<std::string> text = numbered_text();
  text.resize(40, " w");
  p.append(text);
  Stats st(40, {1.0, 0.5, 0.01, 0.3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0});
  p.aggregate(st.mass, st.queries);
  p.fit_budget(20);
  EXPECT_EQ(p.live_tokens(), 20);
  EXPECT_EQ(p.status(1), BlockStatus::Protected);
  EXPECT_EQ(p.status(2), BlockStatus::Evicted);
  EXPECT_EQ(p.status(3), BlockStatus::Evicted);
}

TEST(EvictPolicy, NormalisedMassDoesNotFavourBlocksOnlyForBeingOlder) {
  // Block 1 is old: seen by 100 queries, a little mass each. Block 4 is
  // newer: seen by 10 queries, much more each, yet its raw sum is smaller.
  const std::vector<double> per_query = {1.0, 0.1, 1.0, 1.0, 1.0, 1.0};
  const std::vector<uint32_t> seen = {100, 100, 100, 100, 10, 10};
  std::vector<double> adjusted = per_query;
  adjusted[4] = 0.9;  // raw mass of block 4: 10 x 0.9, under block 1's 100 x 0.1
  EvictOptions o = small_options(EvictKind::Attention);
  o.top_share = 0.0;
  for (EvictKind kind : {EvictKind::Attention, EvictKind::H2O}) {
    o.kind = kind;
    EvictPolicy p = make(o);
    p.append(pieces(24));
    Stats st(24, adjusted, seen);
    p.aggregate(st.mass, st.queries);
    const auto gone = evicted_blocks(p.fit_budget(20));
    ASSERT_EQ(gone.size(), 1u);
    if (kind == EvictKind::Attention)
      EXPECT_EQ(gone[0], 1) << "attention keeps the newer, more attended block";
    else
      EXPECT_EQ(gone[0], 4) << "h2o's raw sums favour the older block";
  }
}

TEST(EvictPolicy, ScoresDecayTowardsTheLatestAggregation) {
  EvictOptions o = small_options(EvictKind::Attention);
  o.decay = 0.5;
  EvictPolicy p = make(o);
  p.append(pieces(8));
  Stats a(8, {1.0, 1.0});
  p.aggregate(a.mass, a.queries);
  Stats b(8, {1.0, 3.0});
  p.aggregate(b.mass, b.queries);
  EXPECT_NEAR(p.score(1), 0.5 * 1.0 + 0.5 * 3.0, 1e-6);
}

TEST(EvictPolicy, WindowBaselinesForgetTheOldestFirst) {
  for (EvictKind kind : {EvictKind::Window, EvictKind::SinksWindow}) {
    EvictPolicy p = make(small_options(kind));
    p.append(pieces(22));  // 6 blocks, the last partial
    const auto gone = evicted_blocks(p.fit_budget(10));
    if (kind == EvictKind::Window) {
      EXPECT_EQ(gone, (std::vector<int>{0, 1, 2}));
      EXPECT_EQ(p.live_tokens(), 10);
    } else {
      EXPECT_EQ(gone, (std::vector<int>{1, 2, 3}));
      EXPECT_EQ(p.status(0), BlockStatus::Sink);
    }
    // The window: blocks touching the last recent_tokens tokens stay.
    EXPECT_EQ(p.status(5), BlockStatus::Recent);
    EXPECT_EQ(p.status(4), BlockStatus::Recent);  // tokens 16..19 reach into the last 4 (18..21)
    p.fit_budget(0);
    EXPECT_NE(p.status(5), BlockStatus::Evicted);
    EXPECT_NE(p.status(4), BlockStatus::Evicted);
  }
}

TEST(EvictPolicy, AggregationIsDueEveryNTokens) {
  EvictPolicy p = make(small_options(EvictKind::Attention));
  p.append(pieces(7));
  EXPECT_FALSE(p.aggregation_due());
  p.append(pieces(1));
  EXPECT_TRUE(p.aggregation_due());
  std::vector<float> m(8, 0.0f);
  std::vector<uint32_t> q(8, 0);
  p.aggregate(m, q);
  EXPECT_FALSE(p.aggregation_due());
}

TEST(EvictPolicy, BadOptionsAreRefusedWithAMessage) {
  EvictOptions o;
  o.protect_patterns = {"(unclosed"};
  auto p = EvictPolicy::create(o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("(unclosed"), std::string::npos);
  o = EvictOptions{};
  o.recent_tokens = 0;
  EXPECT_FALSE(EvictPolicy::create(o));
  o = EvictOptions{};
  o.decay = 1.0;
  EXPECT_FALSE(EvictPolicy::create(o));
  o = EvictOptions{};
  o.block_tokens = 0;
  EXPECT_FALSE(EvictPolicy::create(o));
  o = EvictOptions{};
  o.window_scale = -1.0;
  EXPECT_FALSE(EvictPolicy::create(o));
  o = EvictOptions{};
  o.protect_share = 1.5;
  auto share = EvictPolicy::create(o);
  ASSERT_FALSE(share);
  EXPECT_NE(share.error().message.find("protect_share"), std::string::npos);
  EXPECT_EQ(parse_evict_kind("sinks-window"), EvictKind::SinksWindow);
  EXPECT_FALSE(parse_evict_kind("lru"));
}

}  // namespace
}  // namespace clm
