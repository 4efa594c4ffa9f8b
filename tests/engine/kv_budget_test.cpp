// KV budgets on the real model: a sequence that outgrows its budget forgets
// blocks instead of stopping, runs past n_ctx with its blocks bounded, under
// every policy; prompts longer than n_ctx are scored chunk by chunk with
// eviction in between; the pool under pressure takes candidate blocks from
// running sequences; a budget never reached changes no logit.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/kv_budget.h"
#include "scheduler_rig.h"

namespace clm::test {
namespace {

constexpr int kBlock = 16;
constexpr int kCtx = 128;
constexpr int kBudget = 112;  // 7 blocks: sink, the 64-token window, two to forget

RigOptions budget_rig(EvictKind kind, std::size_t n_blocks = 64, int budget = kBudget) {
  RigOptions o;
  o.n_blocks = n_blocks;
  o.block_size = kBlock;
  o.threads = 2;
  o.scheduler.n_ctx = kCtx;
  o.scheduler.max_batch_tokens = 32;
  o.scheduler.kv_budget_tokens = budget;
  o.scheduler.evict.kind = kind;
  return o;
}

// Steps until idle; returns the most blocks any one sequence held after a step.
std::size_t run_watching_blocks(Rig& rig) {
  std::size_t most = 0;
  while (rig.scheduler->step())
    for (const RunningSequence& r : rig.scheduler->running()) most = std::max(most, r.blocks.size());
  return most;
}

TEST(KvBudget, LongGenerationRunsPastTheContextWithBoundedBlocks) {
  for (EvictKind kind : {EvictKind::Attention, EvictKind::Window, EvictKind::SinksWindow, EvictKind::H2O}) {
    SCOPED_TRACE(std::string(evict_kind_name(kind)));
    Rig rig(real_model(), budget_rig(kind));
    Recorder rec;
    const int n_new = 4 * kCtx;
    auto id = rec.submit(*rig.scheduler, greedy_request(prompt_of(20, 1, real_model().config().n_vocab), n_new));
    ASSERT_TRUE(id) << id.error().message;
    const std::size_t most = run_watching_blocks(rig);
    ASSERT_EQ(rec.done[*id].size(), 1u);
    const RequestSummary& s = rec.done[*id].front();
    EXPECT_EQ(s.stop_reason, "length");
    EXPECT_TRUE(s.note.empty()) << s.note;
    EXPECT_EQ(s.generated_tokens, n_new);  // ran to the end, 4x the context
    // Blocks stay within the budget plus the block still filling, unless
    // protect rules keep more (counted as over budget).
    EXPECT_LE(most, static_cast<std::size_t>(kBudget / kBlock + 2));
    EXPECT_GE(s.evicted_tokens, 20 + n_new - kBudget - 2 * kBlock);
    EXPECT_EQ(s.evicted_tokens % kBlock, 0);
    const SchedulerStats st = rig.scheduler->stats();
    EXPECT_EQ(st.evicted_tokens, static_cast<uint64_t>(s.evicted_tokens));
    EXPECT_EQ(st.evicted_blocks_budget * kBlock, static_cast<uint64_t>(s.evicted_tokens));
    EXPECT_EQ(rig.cache->stats().blocks_forgotten, st.evicted_blocks_budget);
    expect_nothing_held(rig);
  }
}

TEST(KvBudget, LongPromptIsScoredChunkByChunkWithEvictionBetween) {
  // Arbitrary token ids read as text full of capitalised words and numbers,
  // which the default protect rules keep: without rules the budget holds.
  RigOptions o = budget_rig(EvictKind::Attention);
  o.scheduler.evict.protect_patterns = {};
  Rig rig(real_model(), o);
  Request r = greedy_request(prompt_of(3 * kCtx, 2, real_model().config().n_vocab), 1);
  r.prompt_logprobs = 2;
  Recorder rec;
  auto id = rec.submit(*rig.scheduler, r);
  ASSERT_TRUE(id) << id.error().message;  // longer than n_ctx: accepted with a budget
  const std::size_t most = run_watching_blocks(rig);
  const RequestSummary& s = rec.done[*id].front();
  EXPECT_EQ(s.stop_reason, "length");
  ASSERT_EQ(s.prompt_logprobs.size(), static_cast<std::size_t>(3 * kCtx));
  for (std::size_t i = 1; i < s.prompt_logprobs.size(); ++i) {
    ASSERT_TRUE(s.prompt_logprobs[i].has_value()) << "prompt position " << i;
    EXPECT_EQ(s.prompt_logprobs[i]->top.size(), 2u);
    EXPECT_LE(s.prompt_logprobs[i]->logprob, 0.0f);
  }
  EXPECT_GT(s.evicted_tokens, 2 * kCtx - kBudget);
  // The reuse map marks the forgotten blocks (all of the prompt: one token
  // is generated), whole blocks after the first, and still tiles the prompt.
  int marked = 0;
  for (const SourceRun& run : s.reuse_map) {
    if (!run.evicted) continue;
    marked += run.length;
    EXPECT_EQ(run.begin % kBlock, 0);
    EXPECT_GE(run.begin, kBlock) << "the sink block is kept";
  }
  EXPECT_EQ(marked, s.evicted_tokens);
  EXPECT_EQ(mapped_tokens(s.reuse_map), s.prompt_tokens);
  EXPECT_EQ(count_sources(s.reuse_map).computed, s.reuse.computed);
  // The budget, one chunk of 32 and the block a chunk starts in.
  EXPECT_LE(most, static_cast<std::size_t>((kBudget + 32) / kBlock + 2));
  expect_nothing_held(rig);

  // Without a budget the same prompt is refused as longer than the context.
  RigOptions plain = budget_rig(EvictKind::Attention, 64, 0);
  Rig unbudgeted(real_model(), plain);
  auto refused = unbudgeted.scheduler->submit(r, {}, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("context size"), std::string::npos);
}

TEST(KvBudget, ABudgetNeverReachedChangesNoLogit) {
  const auto prompt = prompt_of(40, 3, real_model().config().n_vocab);
  RigOptions with = budget_rig(EvictKind::Attention, 64, 4 * kCtx);
  RigOptions without = budget_rig(EvictKind::Attention, 64, 0);
  Rig a(real_model(), with), b(real_model(), without);
  std::vector<TokenEvent> ea, eb;
  const RequestSummary sa = run_one(a, greedy_request(prompt, 30, true), &ea);
  run_one(b, greedy_request(prompt, 30, true), &eb);
  EXPECT_EQ(sa.evicted_tokens, 0);
  ASSERT_EQ(ea.size(), eb.size());
  for (std::size_t i = 0; i < ea.size(); ++i) EXPECT_TRUE(bitwise_equal(ea[i].logits, eb[i].logits)) << "token " << i;
}

TEST(KvBudget, PoolPressureTakesBlocksFromRunningSequencesBeforePreempting) {
  // Two conversations with a budget of 12 blocks each in a pool of 20:
  // growth finds the pool short before either reaches its budget, and the
  // sequences forget low-mass blocks instead of being preempted. (What the
  // policy never evicts, sink, window, top and protected blocks, is about 8
  // blocks a sequence here: a pool of 16 would have to preempt one.)
  Rig rig(real_model(), budget_rig(EvictKind::Attention, 20, 12 * kBlock));
  Recorder rec;
  const int n_vocab = real_model().config().n_vocab;
  auto a = rec.submit(*rig.scheduler, greedy_request(prompt_of(20, 4, n_vocab), 2 * kCtx));
  auto b = rec.submit(*rig.scheduler, greedy_request(prompt_of(20, 5, n_vocab), 2 * kCtx));
  ASSERT_TRUE(a && b);
  rig.scheduler->run_until_idle();
  const SchedulerStats st = rig.scheduler->stats();
  EXPECT_GT(st.evicted_blocks_pressure, 0u);
  ASSERT_EQ(rec.done[*a].size(), 1u);
  ASSERT_EQ(rec.done[*b].size(), 1u);
  for (const RequestSummary& s : {rec.done[*a].front(), rec.done[*b].front()}) {
    EXPECT_FALSE(s.preempt_cause) << s.note;
    EXPECT_EQ(s.generated_tokens, 2 * kCtx);
  }
  EXPECT_EQ(st.preempted, 0u);
  EXPECT_EQ(st.evicted_tokens, static_cast<uint64_t>(rec.done[*a].front().evicted_tokens + rec.done[*b].front().evicted_tokens));
  expect_nothing_held(rig);
}

TEST(KvBudget, AdmissionTakesRoomFromARunningSequencesCandidates) {
  // One conversation with a budget of 12 blocks runs in a pool of 20 until
  // it holds 11 (under its budget, so its candidates stay queued); then a
  // request arrives whose prompt needs 10 blocks. Admission has the
  // conversation forget candidates (evictions by reason "pressure") instead
  // of waiting or preempting anyone, and the admitted request computes what
  // it computes alone.
  const int n_vocab = real_model().config().n_vocab;
  RigOptions o = budget_rig(EvictKind::Attention, 20, 12 * kBlock);
  // Every block under the mean score is a candidate, and no protect rule
  // keeps any (the arbitrary token ids read as capitalised words): the
  // conversation has candidates queued well before its budget.
  o.scheduler.evict.candidate_fraction = 1.0;
  o.scheduler.evict.protect_patterns = {};
  Rig rig(real_model(), o);
  Recorder rec;
  auto a = rec.submit(*rig.scheduler, greedy_request(prompt_of(20, 4, n_vocab), 2 * kCtx));
  ASSERT_TRUE(a);
  const Request b_request = greedy_request(prompt_of(150, 9, n_vocab), 12, true);
  const std::size_t b_blocks = (150 + 1 + kBlock - 1) / kBlock;  // the prompt and its first token's slot
  while (rig.cache->available_blocks() >= b_blocks && rig.scheduler->step()) {
  }
  ASSERT_LT(rig.cache->available_blocks(), b_blocks);
  ASSERT_GT(rig.scheduler->stats().evict_candidates, 0);
  ASSERT_EQ(rig.scheduler->stats().evicted_blocks_pressure, 0u);  // nothing was short before
  auto b = rec.submit(*rig.scheduler, b_request);
  ASSERT_TRUE(b);
  ASSERT_TRUE(rig.scheduler->step());
  EXPECT_EQ(rig.scheduler->running().size(), 2u);  // admitted at once
  EXPECT_GT(rig.scheduler->stats().evicted_blocks_pressure, 0u);
  rig.scheduler->run_until_idle();
  const SchedulerStats st = rig.scheduler->stats();
  EXPECT_EQ(st.preempted, 0u);
  ASSERT_EQ(rec.done[*a].size(), 1u);
  ASSERT_EQ(rec.done[*b].size(), 1u);
  EXPECT_FALSE(rec.done[*a].front().preempt_cause) << rec.done[*a].front().note;
  EXPECT_EQ(rec.done[*a].front().generated_tokens, 2 * kCtx);
  EXPECT_EQ(rec.done[*b].front().evicted_tokens, 0);

  // The admitted request's output is what it computes alone, logit for logit.
  Rig alone(real_model(), o);
  std::vector<TokenEvent> expected;
  run_one(alone, b_request, &expected);
  const std::vector<TokenEvent>& got = rec.tokens[*b];
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, expected[i].id) << "token " << i;
    EXPECT_TRUE(bitwise_equal(got[i].logits, expected[i].logits)) << "token " << i;
  }
  expect_nothing_held(rig);
}

TEST(KvBudget, RefusesABudgetTooSmallForThePolicy) {
  Rig rig(real_model(), budget_rig(EvictKind::Attention, 64, 3 * kBlock));
  auto id = rig.scheduler->submit(greedy_request(prompt_of(20, 6, real_model().config().n_vocab), 200), {}, {});
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message.find("below the least the eviction policy needs"), std::string::npos);
  Request negative = greedy_request(prompt_of(20, 6, real_model().config().n_vocab), 10);
  negative.overrides.kv_budget_tokens = -1;
  EXPECT_FALSE(rig.scheduler->submit(negative, {}, {}));
  EXPECT_EQ(KvBudget::minimum_tokens(EvictOptions{}, kBlock), 6 * kBlock);
}

}  // namespace
}  // namespace clm::test
