// ReusePlan through KvCacheManager without a model: what plan() finds, that
// it changes nothing, that apply() is all or nothing, and that shifted K/V
// is never handed out as an exact prefix (the exactness frontier). Slots
// carry stamps (cache_test_support.h): a copied slot keeps the stamp of the
// place it was computed at.
#include <gtest/gtest.h>

#include "cache/span_index.h"
#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;
using testing_support::shift_options;
using testing_support::shifting;
using testing_support::SlotStamp;

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs `prompt` to completion and releases it: its blocks stay cached.
void warm(CacheHarness& h, const std::vector<int32_t>& prompt, uint64_t cache_namespace = 0) {
  CachedSequence seq(kBlockSize);
  ASSERT_TRUE(h.run_plan(seq, prompt, shift_options(), cache_namespace));
  h.cache().release(seq);
}

// The tiles of a plan: prefix, then compute ranges and spans' copied parts
// in order, covering the prompt exactly once.
void expect_tiles(const ReusePlan& p, int n) {
  int at = p.prefix_tokens;
  std::size_t c = 0;
  for (const ReuseSpan& s : p.spans) {
    if (at < s.dst_begin + s.lead) {
      ASSERT_LT(c, p.compute.size());
      EXPECT_EQ(p.compute[c].begin, at);
      EXPECT_EQ(p.compute[c].end, s.dst_begin + s.lead);
      ++c;
    }
    at = s.dst_begin + s.length;
  }
  ASSERT_EQ(c + 1, p.compute.size());
  EXPECT_EQ(p.compute[c].begin, at);
  EXPECT_EQ(p.compute[c].end, n);
  const ReuseCounts counts = p.counts(n);
  EXPECT_EQ(counts.total(), n);
}

TEST(ReusePlan, FindsTheUnchangedTextAfterAnEditedStart) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 40);
  warm(h, a);

  // The first three tokens change: nothing is an exact prefix any more.
  const auto b = concat({97, 98, 99}, std::vector<int32_t>(a.begin() + 3, a.end()));
  const CacheStats before = h.cache().stats();
  const ReusePlan p = h.cache().plan(b, 0, shift_options());
  const CacheStats after = h.cache().stats();
  EXPECT_EQ(after.sequences, before.sequences);  // plan changes nothing
  EXPECT_EQ(after.blocks_cached, before.blocks_cached);
  EXPECT_EQ(p.prefix_tokens, 0);
  ASSERT_EQ(p.spans.size(), 1u);
  EXPECT_EQ(p.spans[0].dst_begin, 3);
  EXPECT_EQ(p.spans[0].length, 36);  // up to, not including, the last token
  EXPECT_EQ(p.spans[0].pieces.front().src_pos, 3);
  expect_tiles(p, static_cast<int>(b.size()));

  // Prefix mode and mode off find none of it.
  EXPECT_TRUE(h.cache().plan(b, 0, ReuseOptions{}).spans.empty());
  ReuseOptions off;
  off.mode = ReuseMode::Off;
  const ReusePlan none = h.cache().plan(a, 0, off);
  EXPECT_EQ(none.prefix_tokens, 0);
  EXPECT_TRUE(none.spans.empty());
}

TEST(ReusePlan, ShiftedSlotsAreCopiesAndTheSourceIsUntouched) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 24);
  CachedSequence sa(kBlockSize);
  ASSERT_TRUE(h.run_plan(sa, a, shift_options()));
  // B moves a's tokens 5..20 two places to the right behind a new head.
  const auto b = concat({200, 201, 202, 203, 204, 205, 206}, std::vector<int32_t>(a.begin() + 5, a.begin() + 21));
  CachedSequence sb(kBlockSize);
  const auto p = h.run_plan(sb, b, shift_options());
  ASSERT_TRUE(p);
  ASSERT_EQ(p->spans.size(), 1u);
  const ReuseSpan& s = p->spans[0];
  EXPECT_EQ(s.dst_begin, 7);
  EXPECT_EQ(s.length, 15);
  EXPECT_EQ(s.pieces.front().src_pos, 5);
  EXPECT_TRUE(h.slots_intact(sa));  // the source: never modified
  for (int slot = s.dst_begin; slot < s.dst_begin + s.length; ++slot) {
    const SlotStamp got = h.read_slot(sb, slot);
    EXPECT_EQ(got.token, static_cast<uint32_t>(b[static_cast<std::size_t>(slot)]));
    EXPECT_EQ(got.pos, static_cast<uint32_t>(slot - 2)) << "the copy keeps what was computed at its old place";
  }
  EXPECT_EQ(sb.exact_limit, 7);
  EXPECT_EQ(sb.exact_slots(), 7);
  EXPECT_EQ(sb.next_pos, static_cast<int32_t>(b.size()));
  const ReuseCounts c = p->counts(static_cast<int>(b.size()));
  EXPECT_EQ(c.shift, 15);
  EXPECT_EQ(c.computed, 8);
  EXPECT_EQ(h.cache().stats().shifted_tokens, 15u);
  EXPECT_EQ(h.cache().stats().spans_reused, 1u);
}

TEST(ReusePlan, ApproximateBlocksAreNeverHandedOutAsAnExactPrefix) {
  CacheHarness h(64, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 30);
  warm(h, a);
  const auto b = concat({300, 301, 302, 303, 304, 305}, std::vector<int32_t>(a.begin() + 2, a.end()));
  const std::size_t cached_before = h.cache().stats().blocks_cached;
  CachedSequence sb(kBlockSize);
  const auto p = h.run_plan(sb, b, shift_options());
  ASSERT_TRUE(p);
  ASSERT_FALSE(p->spans.empty());
  // Only block 0 ([300..303]) lies below the frontier (slot 6).
  EXPECT_EQ(sb.keys.size(), 1u);
  h.cache().release(sb);
  // All of b stays resident: block 0 exact, the other 7 full blocks and the
  // 2-token tail as span sources.
  EXPECT_EQ(h.cache().stats().blocks_cached - cached_before, 9u);
  // The same prompt in prefix mode: only that exact block is attached, and
  // every attached slot holds exactly what a cold run computes.
  CachedSequence sc(kBlockSize);
  const auto q = h.run_plan(sc, b, ReuseOptions{});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->prefix_tokens, kBlockSize);
  EXPECT_TRUE(h.slots_intact(sc));
}

TEST(ReusePlan, SpansStartAndEndInsideBlocksAndCrossThem) {
  CacheHarness h(64, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 33);
  warm(h, a);
  // a[6..19): starts inside block 1, ends inside block 4.
  std::vector<int32_t> b{400, 401, 402};
  b.insert(b.end(), a.begin() + 6, a.begin() + 19);
  b.push_back(500);
  const ReusePlan p = h.cache().plan(b, 0, shift_options());
  ASSERT_EQ(p.spans.size(), 1u);
  EXPECT_EQ(p.spans[0].dst_begin, 3);
  EXPECT_EQ(p.spans[0].length, 13);
  ASSERT_EQ(p.spans[0].pieces.size(), 4u);
  EXPECT_EQ(p.spans[0].pieces[0].offset, 2);
  EXPECT_EQ(p.spans[0].pieces[0].length, 2);
  EXPECT_EQ(p.spans[0].pieces[3].length, 3);
  CachedSequence sb(kBlockSize);
  ASSERT_EQ(h.cache().apply(sb, p, b, 0, static_cast<int>(b.size())), ApplyStatus::Ok);
  for (int slot = 3; slot < 16; ++slot)
    EXPECT_EQ(h.read_slot(sb, slot).pos, static_cast<uint32_t>(slot + 3));
}

TEST(ReusePlan, ShortSpansWindowAndLeadAreHonoured) {
  CacheHarness h(64, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 40);
  warm(h, a);
  // Two pieces of a: 6 tokens and 20 tokens, separated by new ones.
  std::vector<int32_t> b{600, 601};
  b.insert(b.end(), a.begin() + 2, a.begin() + 8);
  b.insert(b.end(), {602, 603, 604});
  b.insert(b.end(), a.begin() + 15, a.begin() + 35);
  b.push_back(605);
  const int n = static_cast<int>(b.size());
  EXPECT_EQ(h.cache().plan(b, 0, shift_options(4)).spans.size(), 2u);
  const ReusePlan eight = h.cache().plan(b, 0, shift_options(8));
  ASSERT_EQ(eight.spans.size(), 1u);
  EXPECT_EQ(eight.spans[0].length, 20);
  expect_tiles(eight, n);
  // A window of the last 10 tokens sees only part of the long span.
  ReuseOptions w = shift_options(4);
  w.window = 10;
  const ReusePlan windowed = h.cache().plan(b, 0, w);
  ASSERT_EQ(windowed.spans.size(), 1u);
  EXPECT_EQ(windowed.spans[0].dst_begin, n - 1 - 10);
  // A lead of 3 recomputes each span's first three tokens.
  const ReusePlan lead = h.cache().plan(b, 0, shift_options(4, 3));
  ASSERT_EQ(lead.spans.size(), 2u);
  for (const ReuseSpan& s : lead.spans) EXPECT_EQ(s.lead, 3);
  expect_tiles(lead, n);
  EXPECT_EQ(lead.counts(n).recomputed, 6);
  CachedSequence sb(kBlockSize);
  ASSERT_TRUE(h.run_plan(sb, b, shift_options(4, 3)));
  // The lead tokens of the first span are computed in an exact context.
  EXPECT_EQ(sb.exact_limit, lead.spans[0].dst_begin + 3);
}

TEST(ReusePlan, SpansNeverCrossNamespaces) {
  CacheHarness h(64, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 30);
  warm(h, a, 1);
  const auto b = concat({700, 701, 702}, std::vector<int32_t>(a.begin() + 3, a.end()));
  EXPECT_TRUE(h.cache().plan(b, 0, shift_options()).spans.empty());
  EXPECT_FALSE(h.cache().plan(b, 1, shift_options()).spans.empty());
}

TEST(ReusePlan, APlanWhoseSourceWasEvictedIsStaleAndChangesNothing) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 30);
  warm(h, a);
  const auto b = concat({800, 801, 802}, std::vector<int32_t>(a.begin() + 3, a.end()));
  const ReusePlan p = h.cache().plan(b, 0, shift_options());
  ASSERT_FALSE(p.spans.empty());
  h.cache().clear_cached();  // the sources go between plan and apply
  const CacheStats before = h.cache().stats();
  CachedSequence sb(kBlockSize);
  EXPECT_EQ(h.cache().apply(sb, p, b, 0, static_cast<int>(b.size())), ApplyStatus::Stale);
  EXPECT_TRUE(sb.table.blocks().empty());
  EXPECT_EQ(h.pool().n_free(), h.pool().n_blocks());
  EXPECT_EQ(h.cache().stats().plans_stale, before.plans_stale + 1);
  EXPECT_EQ(h.cache().stats().sequences, before.sequences);
  // Planned again, it computes everything.
  const auto again = h.run_plan(sb, b, shift_options());
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->spans.empty());
  EXPECT_TRUE(h.slots_intact(sb));
}

TEST(ReusePlan, NoRoomChangesNothing) {
  CacheHarness h(12, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 30);  // 8 blocks
  CachedSequence sa(kBlockSize);
  ASSERT_TRUE(h.run_plan(sa, a, shift_options()));
  // a stays live: only 4 blocks are free, B needs 8 of its own.
  const auto b = concat({900, 901, 902}, std::vector<int32_t>(a.begin() + 3, a.end()));
  const ReusePlan p = h.cache().plan(b, 0, shift_options());
  ASSERT_FALSE(p.spans.empty());
  const CacheStats before = h.cache().stats();
  CachedSequence sb(kBlockSize);
  EXPECT_EQ(h.cache().apply(sb, p, b, 0, static_cast<int>(b.size())), ApplyStatus::NoRoom);
  const CacheStats after = h.cache().stats();
  EXPECT_TRUE(sb.table.blocks().empty());
  EXPECT_EQ(after.blocks_free, before.blocks_free);
  EXPECT_EQ(after.blocks_cached, before.blocks_cached);
  EXPECT_EQ(after.sequences, before.sequences);
  for (BlockId id : sa.table.blocks()) EXPECT_EQ(h.pool().refcount(id), 1);
  // Idle sources whose parents would be locked by pinning are not room
  // either: with a released, the source chain itself is all the room there is.
  h.cache().release(sa);
  EXPECT_EQ(h.cache().apply(sb, p, b, 0, static_cast<int>(b.size())), ApplyStatus::NoRoom);
  EXPECT_EQ(h.cache().stats().blocks_cached, 8u);
}

TEST(ReusePlan, NothingFromReuseBeforeOnIsReused) {
  CacheHarness h(64, CacheOptions{}, shifting());
  const auto a = iota_tokens(1, 40);
  warm(h, a);
  const int n = static_cast<int>(a.size());
  ASSERT_EQ(h.cache().plan(a, 0, ReuseOptions{}).prefix_tokens, n - 1);
  // The prefix stops at the limit: two whole blocks, then the first two
  // tokens of the third, copied.
  ReuseOptions limited;
  limited.reuse_before = 10;
  const ReusePlan p = h.cache().plan(a, 0, limited);
  EXPECT_EQ(p.prefix_blocks.size(), 2u);
  EXPECT_EQ(p.partial_tokens, 2);
  EXPECT_EQ(p.prefix_tokens, 10);
  ASSERT_EQ(p.compute.size(), 1u);
  EXPECT_EQ(p.compute[0].begin, 10);
  EXPECT_EQ(p.compute[0].end, n);
  EXPECT_EQ(p.counts(n).computed, n - 10);
  // On a block boundary there is no partial copy.
  limited.reuse_before = 12;
  const ReusePlan whole = h.cache().plan(a, 0, limited);
  EXPECT_EQ(whole.prefix_blocks.size(), 3u);
  EXPECT_EQ(whole.partial_tokens, 0);
  EXPECT_EQ(whole.prefix_tokens, 12);
  // Zero reuses nothing at all; a limit past the prompt changes nothing.
  limited.reuse_before = 0;
  EXPECT_EQ(h.cache().plan(a, 0, limited).prefix_tokens, 0);
  limited.reuse_before = 1000;
  EXPECT_EQ(h.cache().plan(a, 0, limited).prefix_tokens, n - 1);

  // Shifted spans end at the limit too.
  const auto b = concat({97, 98, 99}, std::vector<int32_t>(a.begin() + 3, a.end()));
  ReuseOptions shift = shift_options();
  ASSERT_EQ(h.cache().plan(b, 0, shift).spans.at(0).length, 36);
  shift.reuse_before = 25;
  const ReusePlan q = h.cache().plan(b, 0, shift);
  ASSERT_EQ(q.spans.size(), 1u);
  EXPECT_EQ(q.spans[0].dst_begin, 3);
  EXPECT_EQ(q.spans[0].length, 22);
  expect_tiles(q, n);
  EXPECT_EQ(q.compute.back().begin, 25);
  // Fewer matching tokens before the limit than a span needs: none.
  shift.reuse_before = 3 + shift.min_reuse_tokens - 1;
  EXPECT_TRUE(h.cache().plan(b, 0, shift).spans.empty());
}

TEST(SpanIndex, FindsEveryRunInsideABlockAndForgetsRemovedOnes) {
  SpanIndex index;
  const std::vector<int32_t> t{5, 6, 7, 8, 9, 10};
  index.add(3, t, 0);
  EXPECT_EQ(index.size(), t.size() - SpanIndex::kGram + 1);
  std::vector<std::pair<BlockId, int32_t>> hits;
  index.for_each_candidate(std::span(t).subspan(2, SpanIndex::kGram), 0, 100,
                           [&](BlockId b, int32_t o) { hits.emplace_back(b, o); });
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0], std::make_pair(BlockId{3}, int32_t{2}));
  index.add(4, t, 0);
  int n = 0;
  index.for_each_candidate(std::span(t).subspan(0, SpanIndex::kGram), 0, 1, [&](BlockId, int32_t) { ++n; });
  EXPECT_EQ(n, 1) << "the limit bounds the candidates";
  // Another namespace's blocks with the same tokens are not candidates, and
  // do not use up the limit.
  for (BlockId other = 10; other < 20; ++other) index.add(other, t, 77);
  hits.clear();
  index.for_each_candidate(std::span(t).subspan(0, SpanIndex::kGram), 0, 2,
                           [&](BlockId b, int32_t o) { hits.emplace_back(b, o); });
  ASSERT_EQ(hits.size(), 2u);
  for (const auto& [b, o] : hits) EXPECT_TRUE(b == 3 || b == 4) << b;
  for (BlockId other = 10; other < 20; ++other) index.remove(other, t, 77);
  index.remove(3, t, 0);
  index.remove(4, t, 0);
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace clm
