// The per-variant aggregation of eval reuse: top-1 agreement over scored
// positions only, greedy match lengths, shares of unchanged tokens reused
// and of FLOPs spent.
#include "reuse_eval.h"
#include "reuse_report.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace clm {
namespace {

ReuseCaseResult case_named(std::string id) {
  ReuseCaseResult c;
  c.id = std::move(id);
  c.greedy_tokens = 10;
  c.unchanged_tokens = 100;
  c.full_flops = 1000.0;
  return c;
}

TEST(ReuseSummary, AggregatesCasesAndKeepsMissingPositionsApart) {
  const ReuseCaseResult a = case_named("a");
  ReuseVariantCase va;
  va.positions = 10;
  va.missing = 2;  // two positions whose predecessor was reused
  va.top1_agree = 7;
  va.kl.add(1e-5);
  va.kl.add(4e-5);
  va.greedy_match = 10;
  va.counts = {.prefix = 20, .shift = 70, .recomputed = 4, .computed = 16};
  va.computed_rows = 20;
  va.unchanged_reused = 90;
  va.flops = 250.0;

  const ReuseCaseResult b = case_named("b");
  ReuseVariantCase vb = va;
  vb.missing = 0;
  vb.top1_agree = 10;
  vb.kl = {};
  vb.kl.add(9e-5);
  vb.greedy_match = 3;
  vb.computed_rows = 21;  // disagrees with the counts
  vb.unchanged_reused = 60;
  vb.flops = 500.0;
  vb.probed = 64;  // blend's probes

  ReuseVariantSummary s;
  accumulate(s, a, va, 1.25 / 32.0);
  accumulate(s, b, vb, 1.25 / 32.0);
  EXPECT_EQ(s.cases, 2);
  EXPECT_EQ(s.positions, 20);
  EXPECT_EQ(s.missing, 2);
  EXPECT_EQ(s.scored(), 18);
  EXPECT_DOUBLE_EQ(s.top1(), 17.0 / 18.0);
  EXPECT_EQ(s.kl.count, 3);
  EXPECT_NEAR(s.kl.mean(), (1e-5 + 4e-5 + 9e-5) / 3, 1e-15);
  EXPECT_EQ(s.kl.max, 9e-5);
  EXPECT_EQ(s.worst_case, "b");
  EXPECT_EQ(s.greedy_match, 13);
  EXPECT_EQ(s.greedy_total, 20);
  EXPECT_EQ(s.greedy_exact_cases, 1);
  EXPECT_EQ(s.counts.prefix, 40);
  EXPECT_EQ(s.counts.shift, 140);
  EXPECT_EQ(s.counts.total(), 220);
  EXPECT_DOUBLE_EQ(s.unchanged_reused_share(), 150.0 / 200.0);
  EXPECT_DOUBLE_EQ(s.flops_share(), 750.0 / 2000.0);
  EXPECT_EQ(s.count_mismatches, 1);
  EXPECT_EQ(s.probed, 64);
  // Computed and recomputed tokens count whole; a probe 1/32 of a token
  // plus a quarter of a layer (its Q/K/V projections).
  EXPECT_DOUBLE_EQ(s.linear_share_32, (20.0 + 20.0 + 64 * 1.25 / 32.0) / 220.0);
}

TEST(ReuseSummary, EmptyIsZeroNotNan) {
  const ReuseVariantSummary s;
  EXPECT_EQ(s.top1(), 0.0);
  EXPECT_EQ(s.unchanged_reused_share(), 0.0);
  EXPECT_EQ(s.flops_share(), 0.0);
}

TEST(ReuseVariants, OffPrefixThenShiftPerLead) {
  ReuseEvalOptions o;
  o.modes = {ReuseMode::Shift, ReuseMode::Off};
  o.leads = {0, 4};
  const auto v = reuse_variants(o);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name(), "off");
  EXPECT_EQ(v[1].name(), "shift lead 0");
  EXPECT_EQ(v[2].name(), "shift lead 4");
  o.modes = {ReuseMode::Prefix};
  ASSERT_EQ(reuse_variants(o).size(), 1u);
  EXPECT_EQ(reuse_variants(o)[0].name(), "prefix");
}

TEST(ReuseVariants, BlendPerLeadAndShare) {
  ReuseEvalOptions o;
  o.modes = {ReuseMode::Blend, ReuseMode::Shift};
  o.leads = {0};
  o.blend_leads = {0, 8};
  o.blend_ratios = {BlendChoice{0.15f, false}, BlendChoice{0.15f, true}};
  const auto v = reuse_variants(o);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].name(), "shift lead 0");
  EXPECT_EQ(v[1].name(), "blend 15% lead 0");
  EXPECT_EQ(v[2].name(), "blend auto lead 0");
  EXPECT_EQ(v[3].name(), "blend 15% lead 8");
  EXPECT_EQ(v[4].lead, 8);
  EXPECT_TRUE(v[4].blend.adaptive);
  o.blend_ratios.clear();  // the engine's default share
  o.blend_leads = {0};
  ASSERT_EQ(reuse_variants(o).size(), 2u);
  EXPECT_FLOAT_EQ(reuse_variants(o)[1].blend.ratio, ReuseOptions{}.blend_ratio);
}

TEST(ReuseReport, TheBlendShareIsWrittenAsItWasSet) {
  ReuseEvalResult r;
  ReuseVariant blend;
  blend.mode = ReuseMode::Blend;
  blend.blend = BlendChoice{0.15f, false};
  ReuseVariant adaptive = blend;
  adaptive.blend.adaptive = true;
  r.variants = {blend, adaptive, ReuseVariant{}};
  r.summary.resize(r.variants.size());
  const std::string text = to_json(r).dump();
  // The float 0.15f, not its widening 0.15000000596046448.
  EXPECT_NE(text.find("\"blend_ratio\":0.15,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"blend_ratio\":\"auto\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"blend_ratio\":null"), std::string::npos) << text;
}

}  // namespace
}  // namespace clm
