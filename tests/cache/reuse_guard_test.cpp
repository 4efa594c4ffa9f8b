// The type guard and the block strategies through KvCacheManager::plan,
// without a model: a cached span stands in only for prompt tokens of the
// same block type, from a sequence with the same intent label; `semantic`
// copies whole blocks on both sides, `session` only the exact prefix, and
// `token` fills what whole blocks leave with any span of the same type.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::iota_tokens;
using testing_support::kBlockSize;
using testing_support::shift_options;
using testing_support::shifting;

constexpr uint8_t kAny = TokenLabel::kAnyType;

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Labels of consecutive blocks, each (type, tokens); a block of at least
// `min_block_length` tokens is whole, as the splitter marks it.
PromptLabels blocks_of(std::initializer_list<std::pair<uint8_t, int>> blocks, uint8_t intent = kAny,
                       int min_block_length = 6) {
  PromptLabels out;
  out.intent = intent;
  for (const auto& [type, n] : blocks)
    for (int i = 0; i < n; ++i) out.tokens.push_back(TokenLabel{type, i == 0, i == n - 1, n >= min_block_length});
  return out;
}

// Runs `prompt`, labelled, to completion and releases it: its blocks stay
// cached with their labels.
void warm(CacheHarness& h, const std::vector<int32_t>& prompt, const PromptLabels& labels) {
  CachedSequence seq(kBlockSize);
  seq.labels = labels.tokens;
  seq.intent = labels.intent;
  ASSERT_TRUE(h.run_plan(seq, prompt, shift_options()));
  h.cache().release(seq);
}

ReuseOptions strategy(BlockStrategy s) {
  ReuseOptions o = shift_options();
  o.block_strategy = s;
  return o;
}

int copied(const ReusePlan& p, int n) { return p.counts(n).shift; }

// A document of 16 tokens cached after one start, asked for after another.
struct MovedDocument {
  std::vector<int32_t> doc = iota_tokens(10, 16);
  std::vector<int32_t> source = concat({{90, 91, 92, 93}, doc, {50, 51, 52, 53}});
  std::vector<int32_t> prompt = concat({{80, 81, 82}, doc, {60, 61}});  // the document at 3..19
};

TEST(ReuseGuard, ASpanOfAnotherTypeIsNotReused) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const MovedDocument m;
  warm(h, m.source, blocks_of({{1, 24}}));
  const int n = static_cast<int>(m.prompt.size());

  const ReusePlan same = h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{1, 21}}));
  ASSERT_EQ(same.spans.size(), 1u);
  EXPECT_EQ(same.spans[0].dst_begin, 3);
  EXPECT_EQ(copied(same, n), 16);

  const ReusePlan other = h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{2, 21}}));
  EXPECT_TRUE(other.spans.empty());
  EXPECT_EQ(copied(other, n), 0);

  // Untyped tokens (no splitter ran) match every type: the plan of before.
  EXPECT_EQ(copied(h.cache().plan(m.prompt, 0, shift_options()), n), 16);
}

TEST(ReuseGuard, ASpanCrossingATypeChangeEndsThere) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const MovedDocument m;
  warm(h, m.source, blocks_of({{1, 24}}));
  // The prompt types the document's first 8 tokens as the source does, the
  // other 8 otherwise.
  const ReusePlan p = h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{1, 11}, {2, 10}}));
  ASSERT_EQ(p.spans.size(), 1u);
  EXPECT_EQ(p.spans[0].dst_begin, 3);
  EXPECT_EQ(p.spans[0].length, 8);
}

TEST(ReuseGuard, TailReuseNeedsTheSameIntentLabel) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const MovedDocument m;
  const uint8_t question = 0, instruction = 1;
  warm(h, m.source, blocks_of({{4, 24}}, question));
  const int n = static_cast<int>(m.prompt.size());
  EXPECT_EQ(copied(h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{4, 21}}, question)), n), 16);
  EXPECT_TRUE(h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{4, 21}}, instruction)).spans.empty());
  // A prompt with no user turn has no intent to disagree with.
  EXPECT_EQ(copied(h.cache().plan(m.prompt, 0, shift_options(), blocks_of({{4, 21}}, kAny)), n), 16);
}

// Cached: [4 start][D1: 8][D2: 8][4 end]. Asked: [3 new][the last 4 of D1,
// a block of their own, too short to be whole][D2: 8][2 end].
struct Paragraphs {
  std::vector<int32_t> d1 = iota_tokens(10, 8), d2 = iota_tokens(30, 8);
  std::vector<int32_t> source = concat({{90, 91, 92, 93}, d1, d2, {50, 51, 52, 53}});
  PromptLabels source_labels = blocks_of({{5, 4}, {1, 8}, {0, 8}, {5, 4}});
  std::vector<int32_t> prompt = concat({{80, 81, 82}, {d1.begin() + 4, d1.end()}, d2, {60, 61}});
  PromptLabels prompt_labels = blocks_of({{5, 3}, {1, 4}, {0, 8}, {5, 2}});
};

TEST(ReuseGuard, SemanticStrategyCopiesOnlyWholeBlocks) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const Paragraphs t;
  warm(h, t.source, t.source_labels);
  const int n = static_cast<int>(t.prompt.size());
  const ReusePlan p = h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Semantic), t.prompt_labels);
  ASSERT_EQ(p.spans.size(), 1u);
  EXPECT_EQ(p.spans[0].dst_begin, 7);  // D2, whole on both sides
  EXPECT_EQ(p.spans[0].length, 8);
  EXPECT_EQ(p.spans[0].pieces.front().src_pos, 12);
  EXPECT_EQ(copied(p, n), 8);
  // Token strategy: D2 as a whole block first, then D1's tail in the gap.
  const ReusePlan any = h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Token), t.prompt_labels);
  ASSERT_EQ(any.spans.size(), 2u);
  EXPECT_EQ(any.spans[0].dst_begin, 3);
  EXPECT_EQ(any.spans[0].length, 4);
  EXPECT_EQ(copied(any, n), 12);
}

TEST(ReuseGuard, SemanticStrategyNeedsTheBlockWholeOnTheCachedSideToo) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const Paragraphs t;
  // Cached with D1 and D2 as one block: D2 alone is not a whole block there.
  warm(h, t.source, blocks_of({{5, 4}, {0, 16}, {5, 4}}));
  PromptLabels labels = blocks_of({{5, 3}, {0, 4}, {0, 8}, {5, 2}});
  EXPECT_TRUE(h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Semantic), labels).spans.empty());
  // Asked with D1's tail and D2 as one block, still not the cached block whole.
  labels = blocks_of({{5, 3}, {0, 12}, {5, 2}});
  EXPECT_TRUE(h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Semantic), labels).spans.empty());
  EXPECT_EQ(copied(h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Token), labels), 17), 12);
}

TEST(ReuseGuard, BlocksShorterThanTheMinimumAreNotReusableSnippets) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const Paragraphs t;
  // Every block of 8 tokens is short when the minimum is 9.
  warm(h, t.source, blocks_of({{5, 4}, {1, 8}, {0, 8}, {5, 4}}, kAny, 9));
  const PromptLabels labels = blocks_of({{5, 3}, {1, 4}, {0, 8}, {5, 2}}, kAny, 9);
  EXPECT_TRUE(h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Semantic), labels).spans.empty());
  EXPECT_EQ(copied(h.cache().plan(t.prompt, 0, strategy(BlockStrategy::Token), labels), 17), 12);
}

TEST(ReuseGuard, SessionStrategyReusesOnlyTheExactPrefix) {
  CacheHarness h(32, CacheOptions{}, shifting());
  const auto head = iota_tokens(100, 8), doc = iota_tokens(10, 16);
  const auto source = concat({head, doc, {50, 51}});
  warm(h, source, blocks_of({{3, 8}, {1, 16}, {5, 2}}));
  const auto prompt = concat({head, {70, 71, 72}, doc, {60}});
  const PromptLabels labels = blocks_of({{3, 8}, {4, 3}, {1, 16}, {5, 1}});
  const int n = static_cast<int>(prompt.size());

  const ReusePlan session = h.cache().plan(prompt, 0, strategy(BlockStrategy::Session), labels);
  EXPECT_EQ(session.prefix_tokens, 8);
  EXPECT_TRUE(session.spans.empty());
  EXPECT_EQ(session.counts(n).computed, n - 8);
  // The same prompt under the other strategies also copies the document.
  EXPECT_EQ(copied(h.cache().plan(prompt, 0, strategy(BlockStrategy::Semantic), labels), n), 16);
  EXPECT_EQ(copied(h.cache().plan(prompt, 0, strategy(BlockStrategy::Token), labels), n), 16);
}

TEST(ReuseGuard, BlockStrategyNamesRoundTrip) {
  for (BlockStrategy s : {BlockStrategy::Token, BlockStrategy::Semantic, BlockStrategy::Session})
    EXPECT_EQ(parse_block_strategy(to_string(s)), s);
  EXPECT_FALSE(parse_block_strategy("sentence"));
  EXPECT_FALSE(parse_block_strategy(""));
}

}  // namespace
}  // namespace clm
