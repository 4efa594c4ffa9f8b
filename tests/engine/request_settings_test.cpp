// resolve_request_settings: the defaults pass through untouched, each
// override replaces its own setting and nothing else, and a blend override
// replaces the share and the adaptive choice but keeps the rest of reuse.
#include <gtest/gtest.h>

#include "engine/request_settings.h"

namespace clm {
namespace {

// Defaults that differ from every field's own default, so that a setting
// taken from the wrong place shows.
SchedulerOptions defaults() {
  SchedulerOptions o;
  o.reuse.mode = ReuseMode::Shift;
  o.reuse.min_reuse_tokens = 5;
  o.reuse.window = 100;
  o.reuse.lead = 7;
  o.reuse.blend_ratio = 0.4f;
  o.reuse.blend_layer = 3;
  o.reuse.blend_adaptive = true;
  o.reuse.block_strategy = BlockStrategy::Semantic;
  o.reuse.reuse_before = 11;
  o.kv_budget_tokens = 300;
  o.evict_positions = EvictPositions::Compact;
  return o;
}

void expect_same_reuse(const ReuseOptions& got, const ReuseOptions& want) {
  EXPECT_EQ(got.mode, want.mode);
  EXPECT_EQ(got.min_reuse_tokens, want.min_reuse_tokens);
  EXPECT_EQ(got.window, want.window);
  EXPECT_EQ(got.lead, want.lead);
  EXPECT_EQ(got.blend_ratio, want.blend_ratio);
  EXPECT_EQ(got.blend_layer, want.blend_layer);
  EXPECT_EQ(got.blend_adaptive, want.blend_adaptive);
  EXPECT_EQ(got.block_strategy, want.block_strategy);
  EXPECT_EQ(got.reuse_before, want.reuse_before);
}

TEST(RequestSettings, NoOverridesIsTheDefaults) {
  const SchedulerOptions d = defaults();
  const ResolvedRequestSettings s = resolve_request_settings(d, {});
  expect_same_reuse(s.reuse, d.reuse);
  EXPECT_EQ(s.kv_budget_tokens, 300);
  EXPECT_EQ(s.evict_positions, EvictPositions::Compact);
}

TEST(RequestSettings, ReuseModeOverrideChangesTheModeAlone) {
  RequestOverrides o;
  o.reuse = ReuseMode::Off;
  const ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  ReuseOptions want = defaults().reuse;
  want.mode = ReuseMode::Off;
  expect_same_reuse(s.reuse, want);
  EXPECT_EQ(s.kv_budget_tokens, 300);
  EXPECT_EQ(s.evict_positions, EvictPositions::Compact);
}

TEST(RequestSettings, BlendOverrideKeepsTheRestOfReuse) {
  RequestOverrides o;
  o.blend = BlendChoice{0.7f, false};
  const ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  ReuseOptions want = defaults().reuse;
  want.blend_ratio = 0.7f;
  want.blend_adaptive = false;  // a fixed share overrides the defaults' adaptive choice too
  expect_same_reuse(s.reuse, want);
  EXPECT_EQ(s.kv_budget_tokens, 300);
  EXPECT_EQ(s.evict_positions, EvictPositions::Compact);

  // "auto" over a fixed default share.
  SchedulerOptions fixed = defaults();
  fixed.reuse.blend_adaptive = false;
  o.blend = BlendChoice{BlendChoice{}.ratio, true};
  const ResolvedRequestSettings a = resolve_request_settings(fixed, o);
  EXPECT_TRUE(a.reuse.blend_adaptive);
  EXPECT_EQ(a.reuse.blend_ratio, BlendChoice{}.ratio);
  EXPECT_EQ(a.reuse.blend_layer, 3);
  EXPECT_EQ(a.reuse.mode, ReuseMode::Shift);
}

TEST(RequestSettings, BlockStrategyOverrideChangesTheStrategyAlone) {
  RequestOverrides o;
  o.block_strategy = BlockStrategy::Session;
  const ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  ReuseOptions want = defaults().reuse;
  want.block_strategy = BlockStrategy::Session;
  expect_same_reuse(s.reuse, want);
  EXPECT_EQ(s.kv_budget_tokens, 300);
  EXPECT_EQ(s.evict_positions, EvictPositions::Compact);
}

TEST(RequestSettings, KvBudgetOverrideWinsEvenWhenZero) {
  RequestOverrides o;
  o.kv_budget_tokens = 64;
  ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  EXPECT_EQ(s.kv_budget_tokens, 64);
  expect_same_reuse(s.reuse, defaults().reuse);
  EXPECT_EQ(s.evict_positions, EvictPositions::Compact);
  // 0 asks for no budget: an override, not an absent one.
  o.kv_budget_tokens = 0;
  EXPECT_EQ(resolve_request_settings(defaults(), o).kv_budget_tokens, 0);
  // A negative one passes through for submit to refuse.
  o.kv_budget_tokens = -1;
  EXPECT_EQ(resolve_request_settings(defaults(), o).kv_budget_tokens, -1);
}

TEST(RequestSettings, EvictPositionsOverrideChangesThePositionsAlone) {
  RequestOverrides o;
  o.evict_positions = EvictPositions::Keep;
  const ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  EXPECT_EQ(s.evict_positions, EvictPositions::Keep);
  expect_same_reuse(s.reuse, defaults().reuse);
  EXPECT_EQ(s.kv_budget_tokens, 300);
}

TEST(RequestSettings, AllOverridesTogether) {
  RequestOverrides o;
  o.reuse = ReuseMode::Blend;
  o.blend = BlendChoice{0.25f, false};
  o.block_strategy = BlockStrategy::Token;
  o.kv_budget_tokens = 128;
  o.evict_positions = EvictPositions::Keep;
  const ResolvedRequestSettings s = resolve_request_settings(defaults(), o);
  ReuseOptions want = defaults().reuse;
  want.mode = ReuseMode::Blend;
  want.blend_ratio = 0.25f;
  want.blend_adaptive = false;
  want.block_strategy = BlockStrategy::Token;
  expect_same_reuse(s.reuse, want);
  EXPECT_EQ(s.kv_budget_tokens, 128);
  EXPECT_EQ(s.evict_positions, EvictPositions::Keep);
}

}  // namespace
}  // namespace clm
