// ReuseMap: the per-token view of a plan. Its runs tile the prompt, agree
// with ReusePlan::counts, and stay compact (no two neighbours alike) when
// blend's picks or budget evictions change single tokens.
#include <gtest/gtest.h>

#include <vector>

#include "cache/reuse_map.h"
#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;
using testing_support::shift_options;
using testing_support::shifting;

void expect_tiles(const ReuseMap& map, int n) {
  int32_t at = 0;
  for (std::size_t i = 0; i < map.size(); ++i) {
    EXPECT_EQ(map[i].begin, at);
    EXPECT_GT(map[i].length, 0);
    if (i > 0) {
      EXPECT_FALSE(map[i].source == map[i - 1].source && map[i].evicted == map[i - 1].evicted);
    }
    at += map[i].length;
  }
  EXPECT_EQ(at, n);
  EXPECT_EQ(mapped_tokens(map), n);
}

void expect_counts(const ReuseCounts& a, const ReuseCounts& b) {
  EXPECT_EQ(a.prefix, b.prefix);
  EXPECT_EQ(a.shift, b.shift);
  EXPECT_EQ(a.recomputed, b.recomputed);
  EXPECT_EQ(a.computed, b.computed);
}

ReusePlan hand_plan() {
  ReusePlan p;
  p.prefix_tokens = 8;
  p.spans.push_back({12, 10, 3, {}});  // 12..15 recomputed, 15..22 shifted
  p.spans.push_back({22, 6, 2, {}});   // right after: 22..24 recomputed, 24..28 shifted
  return p;
}

TEST(ReuseMap, TilesThePromptAsThePlanSays) {
  const ReusePlan p = hand_plan();
  const ReuseMap map = reuse_map_of(p, 40);
  expect_tiles(map, 40);
  const ReuseMap expected = {{TokenSource::Prefix, false, 0, 8},      {TokenSource::Computed, false, 8, 4},
                             {TokenSource::Recomputed, false, 12, 3}, {TokenSource::Shift, false, 15, 7},
                             {TokenSource::Recomputed, false, 22, 2}, {TokenSource::Shift, false, 24, 4},
                             {TokenSource::Computed, false, 28, 12}};
  EXPECT_EQ(map, expected);
  expect_counts(count_sources(map), p.counts(40));
}

TEST(ReuseMap, EmptyPlansAndPromptsGivePlainMaps) {
  EXPECT_TRUE(reuse_map_of(ReusePlan{}, 0).empty());
  const ReuseMap all = reuse_map_of(ReusePlan{}, 5);
  EXPECT_EQ(all, (ReuseMap{{TokenSource::Computed, false, 0, 5}}));
  ReusePlan whole;
  whole.prefix_tokens = 5;
  EXPECT_EQ(reuse_map_of(whole, 5), (ReuseMap{{TokenSource::Prefix, false, 0, 5}}));
}

TEST(ReuseMap, BlendPicksSplitShiftedRunsAndKeepTheCounts) {
  const ReusePlan p = hand_plan();
  ReuseMap map = reuse_map_of(p, 40);
  const std::vector<int32_t> picks = {15, 18, 19, 27};
  set_source(map, picks, TokenSource::Recomputed);
  expect_tiles(map, 40);
  ReuseCounts expected = p.counts(40);
  expected.shift -= 4;
  expected.recomputed += 4;
  expect_counts(count_sources(map), expected);
  // 15 joins the lead before it: 12..16 is one run.
  EXPECT_EQ(map[2], (SourceRun{TokenSource::Recomputed, false, 12, 4}));
}

TEST(ReuseMap, EvictionMarksKeepTheSourceAndClipToThePrompt) {
  ReuseMap map = reuse_map_of(hand_plan(), 40);
  const ReuseCounts before = count_sources(map);
  const std::vector<PromptRange> forgotten = {{4, 10}, {36, 64}};
  mark_evicted(map, forgotten);
  expect_tiles(map, 40);
  expect_counts(count_sources(map), before);
  int evicted = 0;
  for (const SourceRun& r : map)
    if (r.evicted) evicted += r.length;
  EXPECT_EQ(evicted, 6 + 4);
  EXPECT_EQ(map[0], (SourceRun{TokenSource::Prefix, false, 0, 4}));
  EXPECT_EQ(map[1], (SourceRun{TokenSource::Prefix, true, 4, 4}));
  EXPECT_EQ(map[2], (SourceRun{TokenSource::Computed, true, 8, 2}));
  EXPECT_EQ(map.back(), (SourceRun{TokenSource::Computed, true, 36, 4}));
}

TEST(ReuseMap, AgreesWithTheCountsOfARealShiftPlan) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 70);
  CachedSequence seq(kBlockSize);
  ASSERT_TRUE(h.run_plan(seq, a, shift_options(), 0));
  h.cache().release(seq);
  // A new start, then a's tokens: an exact prefix is gone, a span is found.
  std::vector<int32_t> b = {97, 98, 99};
  b.insert(b.end(), a.begin() + 3, a.end());
  const ReusePlan p = h.cache().plan(b, 0, shift_options());
  ASSERT_FALSE(p.spans.empty());
  const int n = static_cast<int>(b.size());
  const ReuseMap map = reuse_map_of(p, n);
  expect_tiles(map, n);
  expect_counts(count_sources(map), p.counts(n));
  EXPECT_GT(count_sources(map).shift, 0);
}

}  // namespace
}  // namespace clm
