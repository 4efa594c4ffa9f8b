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
  EXPECT_EQ(evicted_blocks(p.fit_budget(0)), (std::vector<int>{2, 4}));
  EXPECT_EQ(p.status(1), BlockStatus::Protected);
  EXPECT_EQ(p.status(3), BlockStatus::Protected);

  // A digit alone is a number.
  EvictPolicy q = make(o);
  q.append(std::vector<std::string>{"a", " b", " c", " d", " e", " 7", " g", " h", " i", " j", " k", " l"});
  Stats st2(12, {1.0, 0.001, 1.0});
  q.aggregate(st2.mass, st2.queries);
  EXPECT_EQ(q.status(1), BlockStatus::Protected);
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
  EXPECT_EQ(parse_evict_kind("sinks-window"), EvictKind::SinksWindow);
  EXPECT_FALSE(parse_evict_kind("lru"));
}

}  // namespace
}  // namespace clm
