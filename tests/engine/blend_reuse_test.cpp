// Reuse mode blend through the scheduler on the real model: chunks cached in
// one order and asked in another. Blend probes every copied token, then
// recomputes the most deviant share; at share 1 that is a full recompute and
// must be bitwise a cold run; at the default it must be closer to cold than
// shift alone; the counts, FLOPs and exactness frontier must say what
// happened; and cancelled or concurrent blending leaks nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/blend_selection.h"
#include "engine/scheduler_rig.h"
#include "model/prefill_flops.h"

namespace clm {
namespace {

using test::expect_nothing_held;
using test::greedy_request;
using test::Recorder;
using test::Rig;
using test::RigOptions;
using test::run_one;

Model& real() { return test::real_model(); }

std::vector<int32_t> text(const std::string& s, bool bos = false) { return real().tokenizer().encode(s, bos, false); }

std::vector<int32_t> join(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const char* kPreamble = "Here are two stories about Lily and her friends.";
const char* kChunk1 =
    " Lily and Ben went to the park. They saw a big red ball under a tree. Ben wanted to kick the ball, but Lily "
    "said it was not theirs. They looked for the owner and found a little boy who was sad.";
const char* kChunk2 =
    " Tom had a small dog named Max. Max liked to run in the garden and dig big holes. One day Max found an old "
    "shoe in a hole, and Tom laughed so hard that his mom came out to see.";
const char* kQuestion = " Which story do you like more? I like the one where";

// The warm prompt caches the chunks in one order; the asked prompt wants
// the other.
std::vector<int32_t> warm_prompt() {
  return join({text(kPreamble, true), text(kChunk2), text(kChunk1)});
}
std::vector<int32_t> asked_prompt() {
  return join({text(kPreamble, true), text(kChunk1), text(kChunk2), text(kQuestion)});
}

RigOptions rig_options() {
  RigOptions o;
  o.n_blocks = 96;
  o.scheduler.n_ctx = 512;
  o.scheduler.max_batch_tokens = 48;  // several steps per pass
  return o;
}

Request blend_request(std::vector<int32_t> prompt, int max_tokens, float ratio, ReuseMode mode = ReuseMode::Blend) {
  Request r = greedy_request(std::move(prompt), max_tokens, true);
  r.overrides.reuse = mode;
  r.overrides.blend = BlendChoice{ratio, false};
  return r;
}

double kl_of_next_token(const std::vector<float>& p_logits, const std::vector<float>& q_logits) {
  auto probs = [](const std::vector<float>& logits) {
    std::vector<double> p(logits.size());
    const double m = *std::max_element(logits.begin(), logits.end());
    double z = 0.0;
    for (std::size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(static_cast<double>(logits[i]) - m);
    for (double& x : p) x /= z;
    return p;
  };
  const auto p = probs(p_logits), q = probs(q_logits);
  double kl = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0.0) kl += p[i] * std::log(p[i] / q[i]);
  return kl;
}

struct Outcome {
  RequestSummary summary;
  std::vector<TokenEvent> events;
};

Outcome ask(ReuseMode mode, float ratio, int max_tokens = 4, bool adaptive = false) {
  Rig rig(real(), rig_options());
  run_one(rig, blend_request(warm_prompt(), 0, 0.0f, ReuseMode::Prefix));
  Outcome out;
  Request r = blend_request(asked_prompt(), max_tokens, ratio, mode);
  r.overrides.blend->adaptive = adaptive;
  out.summary = run_one(rig, std::move(r), &out.events);
  expect_nothing_held(rig);
  return out;
}

TEST(BlendReuse, RecomputingEveryCopiedTokenIsBitwiseAColdRun) {
  const Outcome cold = ask(ReuseMode::Off, 0.0f);
  const Outcome blend = ask(ReuseMode::Blend, 1.0f);
  const RequestSummary& s = blend.summary;
  EXPECT_EQ(s.reuse.shift, 0);
  EXPECT_GT(s.reuse.recomputed, 60) << "the chunks were found and all recomputed";
  EXPECT_EQ(s.reuse.total(), s.prompt_tokens);
  EXPECT_GT(s.blend_probed, 60);
  ASSERT_EQ(blend.events.size(), cold.events.size());
  for (std::size_t i = 0; i < cold.events.size(); ++i) {
    EXPECT_EQ(blend.events[i].id, cold.events[i].id);
    EXPECT_TRUE(test::bitwise_equal(blend.events[i].logits, cold.events[i].logits)) << "token " << i;
  }
}

// The source of each prompt token, as a request's reuse map says.
std::vector<TokenSource> token_sources(const RequestSummary& s) {
  std::vector<TokenSource> out;
  for (const SourceRun& r : s.reuse_map) out.insert(out.end(), static_cast<std::size_t>(r.length), r.source);
  return out;
}

void expect_map_matches_counts(const RequestSummary& s) {
  const ReuseCounts c = count_sources(s.reuse_map);
  EXPECT_EQ(mapped_tokens(s.reuse_map), s.prompt_tokens);
  EXPECT_EQ(c.prefix, s.reuse.prefix);
  EXPECT_EQ(c.shift, s.reuse.shift);
  EXPECT_EQ(c.recomputed, s.reuse.recomputed);
  EXPECT_EQ(c.computed, s.reuse.computed);
}

TEST(BlendReuse, TheReuseMapMovesExactlyThePicksFromShiftToRecomputed) {
  const RequestSummary shift = ask(ReuseMode::Shift, 0.0f, 1).summary;
  const RequestSummary blend = ask(ReuseMode::Blend, 0.15f, 1).summary;
  expect_map_matches_counts(shift);
  expect_map_matches_counts(blend);
  const std::vector<TokenSource> a = token_sources(shift), b = token_sources(blend);
  ASSERT_EQ(a.size(), b.size());
  int moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    EXPECT_EQ(a[i], TokenSource::Shift) << "position " << i;
    EXPECT_EQ(b[i], TokenSource::Recomputed) << "position " << i;
    ++moved;
  }
  EXPECT_EQ(moved, blend.reuse.recomputed - shift.reuse.recomputed);
  EXPECT_GT(moved, 0);
  for (const SourceRun& r : blend.reuse_map) EXPECT_FALSE(r.evicted);
}

TEST(BlendReuse, TheDefaultShareIsCloserToColdThanShiftAndCountsWhatItDid) {
  const Outcome cold = ask(ReuseMode::Off, 0.0f, 1);
  const Outcome shift = ask(ReuseMode::Shift, 0.0f, 1);
  const Outcome blend = ask(ReuseMode::Blend, 0.15f, 1);
  const RequestSummary& sh = shift.summary;
  const RequestSummary& bl = blend.summary;
  // The same plan; blend then moves round(0.15 * copied) tokens from
  // "shift" to "recomputed".
  const int copied = sh.reuse.shift;
  ASSERT_GT(copied, 60);
  const int picked = static_cast<int>(std::lround(0.15 * copied));
  EXPECT_EQ(bl.reuse.shift, copied - picked);
  EXPECT_EQ(bl.reuse.recomputed, sh.reuse.recomputed + picked);
  EXPECT_EQ(bl.reuse.prefix, sh.reuse.prefix);
  EXPECT_EQ(sh.blend_probed, 0);
  // Probed: every token from the end of the exact prefix to the last copied one.
  EXPECT_GE(bl.blend_probed, copied);
  EXPECT_LE(bl.blend_probed, bl.prompt_tokens - bl.reuse.prefix);
  // FLOPs: more than shift (the probes and the picks), less than cold.
  // (Only a little less on this 5-layer model, whose probes run 2 of its 5
  // layers; docs/QUALITY.md states the share at 32 layers.)
  const PrefillFlops flops(real().config());
  EXPECT_GT(bl.prefill_flops, sh.prefill_flops + bl.blend_probed * flops.probe(0, 2) / 2);
  EXPECT_LT(bl.prefill_flops, cold.summary.prefill_flops);
  EXPECT_DOUBLE_EQ(cold.summary.prefill_flops, flops.full(cold.summary.prompt_tokens));
  const double kl_shift = kl_of_next_token(cold.events[0].logits, shift.events[0].logits);
  const double kl_blend = kl_of_next_token(cold.events[0].logits, blend.events[0].logits);
  std::printf("next-token KL vs cold: shift %.3g, blend 0.15 %.3g\n", kl_shift, kl_blend);
  EXPECT_LT(kl_blend, kl_shift);
}

TEST(BlendReuse, AdaptiveSharePicksWithinItsBounds) {
  const RequestSummary s = ask(ReuseMode::Blend, 0.0f, 1, true).summary;
  const RequestSummary shift = ask(ReuseMode::Shift, 0.0f, 1).summary;
  const int copied = shift.reuse.shift;
  const int picked = s.reuse.recomputed - shift.reuse.recomputed;
  EXPECT_GE(picked, static_cast<int>(std::ceil(kBlendAdaptiveMin * copied)));
  EXPECT_LE(picked, static_cast<int>(std::floor(kBlendAdaptiveMax * copied)));
  std::printf("adaptive share: %d of %d copied tokens\n", picked, copied);
}

TEST(BlendReuse, APrefixRequestAfterABlendedOneIsBitwiseAColdRun) {
  // The blended prompt's blocks after its first copied token are never
  // published as an exact prefix, and nothing is cached before blend has
  // finished rewriting it.
  Rig rig(real(), rig_options());
  run_one(rig, blend_request(warm_prompt(), 0, 0.0f, ReuseMode::Prefix));
  run_one(rig, blend_request(asked_prompt(), 2, 0.15f));
  Request probe = blend_request(asked_prompt(), 4, 0.0f, ReuseMode::Prefix);
  std::vector<TokenEvent> warm, cold;
  const RequestSummary ws = run_one(rig, probe, &warm);
  EXPECT_EQ(ws.reuse.shift, 0);
  Rig cold_rig(real(), rig_options());
  probe.overrides.reuse = ReuseMode::Off;
  run_one(cold_rig, probe, &cold);
  ASSERT_EQ(warm.size(), cold.size());
  for (std::size_t i = 0; i < warm.size(); ++i)
    EXPECT_TRUE(test::bitwise_equal(warm[i].logits, cold[i].logits)) << "token " << i;
  expect_nothing_held(rig);
}

TEST(BlendReuse, CancellingInEitherPassAndRunningManyAtOnceLeakNothing) {
  for (int steps : {1, 3, 6}) {  // inside the probe pass, at its end, inside the recompute
    RigOptions o = rig_options();
    o.scheduler.max_batch_tokens = 16;
    Rig rig(real(), o);
    run_one(rig, blend_request(warm_prompt(), 0, 0.0f, ReuseMode::Prefix));
    Recorder rec;
    auto id = rec.submit(*rig.scheduler, blend_request(asked_prompt(), 4, 0.3f));
    ASSERT_TRUE(id);
    for (int i = 0; i < steps; ++i) rig.scheduler->step();
    EXPECT_TRUE(rec.done[*id].empty()) << steps;
    rig.scheduler->cancel(*id);
    rig.scheduler->run_until_idle();
    ASSERT_EQ(rec.done[*id].size(), 1u);
    EXPECT_EQ(rec.done[*id].front().stop_reason, "cancelled");
    expect_nothing_held(rig);
  }
  RigOptions o = rig_options();
  o.n_blocks = 160;
  Rig rig(real(), o);
  run_one(rig, blend_request(warm_prompt(), 0, 0.0f, ReuseMode::Prefix));
  Recorder rec;
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) {
    auto id = rec.submit(*rig.scheduler, blend_request(asked_prompt(), 3, 0.1f * static_cast<float>(i)));
    ASSERT_TRUE(id);
    ids.push_back(*id);
  }
  rig.scheduler->run_until_idle();
  for (RequestId id : ids) {
    ASSERT_EQ(rec.done[id].size(), 1u);
    EXPECT_EQ(rec.done[id].front().stop_reason, "length");
    EXPECT_EQ(rec.done[id].front().reuse.total(), rec.done[id].front().prompt_tokens);
  }
  expect_nothing_held(rig);
}

TEST(BlendSelection, PicksTheMostDeviantAndMergesThemIntoTheRangesToCompute) {
  const std::vector<float> dev{0.1f, 5.0f, 0.3f, 5.0f, 2.0f, 0.0f, 0.2f, 9.0f, 0.4f, 1.0f};
  EXPECT_EQ(select_for_recompute(dev, 0.3f, false), (std::vector<int32_t>{1, 3, 7}));
  EXPECT_EQ(select_for_recompute(dev, 0.25f, false), (std::vector<int32_t>{1, 3, 7}));  // round(2.5) = 3
  EXPECT_EQ(select_for_recompute(dev, 0.2f, false), (std::vector<int32_t>{1, 7}));      // tie: the earlier
  EXPECT_TRUE(select_for_recompute(dev, 0.0f, false).empty());
  EXPECT_EQ(select_for_recompute(dev, 2.0f, false).size(), dev.size());
  EXPECT_TRUE(select_for_recompute({}, 0.5f, false).empty());
  // Adaptive: 95% of the total (23) takes the five largest (9 + 5 + 5 + 2 +
  // 1 = 22), capped at floor(0.3 * 10) = 3.
  EXPECT_EQ(select_for_recompute(dev, 0.0f, true), (std::vector<int32_t>{1, 3, 7}));
  // One token holding nearly everything: the floor of ceil(0.05 * 10) = 1.
  const std::vector<float> one{0.0f, 0.0f, 100.0f, 0.001f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(select_for_recompute(one, 0.0f, true), (std::vector<int32_t>{2}));
  // A flat deviation needs 95% of the tokens: capped at 30%.
  const std::vector<float> flat(20, 1.0f);
  EXPECT_EQ(select_for_recompute(flat, 0.0f, true).size(), 6u);
  const std::vector<PromptRange> ranges{{10, 12}, {20, 30}};
  const std::vector<int32_t> picks{5, 12, 13, 19, 30};
  const auto merged = add_positions(ranges, picks);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].begin, 5);
  EXPECT_EQ(merged[0].end, 6);
  EXPECT_EQ(merged[1].begin, 10);
  EXPECT_EQ(merged[1].end, 14);
  EXPECT_EQ(merged[2].begin, 19);
  EXPECT_EQ(merged[2].end, 31);
  EXPECT_EQ(add_positions(ranges, std::vector<int32_t>{32}).size(), 3u);  // [30, 32) is not touched
}

}  // namespace
}  // namespace clm
