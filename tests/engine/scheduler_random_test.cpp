// Thousands of random submit / cancel / step operations against a small pool,
// checked after every step against a simple model of what must hold: blocks
// are accounted for, every accepted request ends exactly once and for a
// reason it was given, and nothing leaks.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/scheduler_rig.h"

namespace clm {
namespace {

struct Expected {
  std::size_t prompt = 0;
  int max_tokens = 0;
  int refuse_after = -1;  // the token callback returns false at this token
  bool cancelled = false;  // cancel() was called on it
  int tokens = 0;
  int done = 0;
  RequestSummary summary;
};

TEST(SchedulerRandom, InvariantsHoldUnderRandomOperations) {
  Model& model = test::synthetic_model(WeightType::F32);
  const int vocab = model.config().n_vocab;
  test::RigOptions o;
  o.n_blocks = 24;
  o.block_size = 4;
  o.scheduler.n_ctx = 64;
  o.scheduler.max_running = 4;
  o.scheduler.max_batch_tokens = 16;
  o.scheduler.max_queued = 8;
  test::Rig rig(model, o);
  Scheduler& s = *rig.scheduler;

  std::mt19937_64 rng(20240611);
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  // Prompts are drawn from a few stems so that prefixes are shared and hit.
  std::vector<std::vector<int32_t>> stems;
  for (int i = 0; i < 3; ++i) stems.push_back(test::prompt_of(40, i, vocab));

  std::map<RequestId, Expected> expected;
  std::vector<RequestId> ids;
  int refused = 0, steps = 0;

  auto check_invariants = [&] {
    const CacheStats cs = rig.cache->stats();
    ASSERT_EQ(cs.blocks_used + cs.blocks_cached + cs.blocks_free, cs.blocks_total);
    std::size_t referenced = 0;
    std::set<BlockId> distinct;
    for (const RunningSequence& r : s.running()) {
      ASSERT_TRUE(expected.count(r.id));
      ASSERT_EQ(expected[r.id].done, 0) << "a finished request still runs";
      for (BlockId b : r.blocks) {
        ASSERT_GE(rig.pool->refcount(b), 1) << "request " << r.id << " holds block " << b;
        distinct.insert(b);
      }
      ASSERT_LE(r.tokens, o.scheduler.n_ctx);
      ++referenced;
    }
    ASSERT_LE(referenced, static_cast<std::size_t>(o.scheduler.max_running));
    // Blocks held by running sequences are exactly the used ones.
    ASSERT_EQ(distinct.size(), cs.blocks_used);
  };

  for (int op = 0; op < 3000; ++op) {
    const int kind = uniform(0, 99);
    if (kind < 35) {
      Request r;
      const auto& stem = stems[static_cast<std::size_t>(uniform(0, 2))];
      const int n = uniform(1, 40);
      r.prompt.assign(stem.begin(), stem.begin() + n);
      for (int extra = uniform(0, 30); extra > 0; --extra) r.prompt.push_back(uniform(3, vocab - 1));
      if (uniform(0, 19) == 0) r.prompt.resize(70, 5);  // longer than n_ctx: refused
      r.max_tokens = uniform(0, 6);
      r.stop_at_end_of_generation = false;
      r.sampler.temperature = uniform(0, 1) ? 0.0f : 0.9f;
      r.sampler.seed = rng();
      Expected e;
      e.prompt = r.prompt.size();
      e.max_tokens = r.max_tokens;
      e.refuse_after = uniform(0, 4) == 0 ? uniform(1, 3) : -1;
      auto slot = std::make_shared<RequestId>();
      auto id = s.submit(
          std::move(r),
          [&expected, slot](const TokenEvent&) {
            Expected& x = expected[*slot];
            EXPECT_EQ(x.done, 0) << "token after done";
            return ++x.tokens != x.refuse_after;
          },
          [&expected, slot](const RequestSummary& sum) {
            Expected& x = expected[*slot];
            ++x.done;
            x.summary = sum;
          });
      if (!id) {
        ++refused;
        const bool too_long = e.prompt > static_cast<std::size_t>(o.scheduler.n_ctx);
        EXPECT_TRUE(too_long || s.stats().queued == o.scheduler.max_queued) << id.error().message;
        continue;
      }
      *slot = *id;
      expected[*id] = e;
      ids.push_back(*id);
    } else if (kind < 50 && !ids.empty()) {
      const RequestId id = ids[static_cast<std::size_t>(uniform(0, static_cast<int>(ids.size()) - 1))];
      if (expected[id].done == 0) expected[id].cancelled = true;
      s.cancel(id);
    } else {
      s.step();
      ++steps;
      check_invariants();
      if (HasFatalFailure()) return;
    }
  }
  s.run_until_idle();
  check_invariants();

  int cancelled = 0, preempted = 0, cached = 0;
  for (const auto& [id, e] : expected) {
    ASSERT_EQ(e.done, 1) << "request " << id << " ended " << e.done << " times";
    EXPECT_EQ(e.summary.generated_tokens, e.tokens);
    const StopReason why = e.summary.stop_reason;
    const bool refused_token = e.refuse_after > 0 && e.tokens == e.refuse_after;
    if (why == "cancelled") {
      EXPECT_TRUE(e.cancelled || refused_token) << "request " << id << " cancelled by nobody";
      ++cancelled;
    } else {
      ASSERT_EQ(why, "length") << "request " << id;
      EXPECT_FALSE(refused_token);
      const int room = o.scheduler.n_ctx - static_cast<int>(e.prompt);
      if (e.summary.note.empty()) {
        EXPECT_EQ(e.tokens, std::min(e.max_tokens, room)) << "request " << id;
      } else {
        EXPECT_LT(e.tokens, std::min(e.max_tokens, room));
        ++preempted;
      }
    }
    cached += e.summary.cached_tokens > 0 ? 1 : 0;
  }
  const CacheStats cs = rig.cache->stats();
  EXPECT_EQ(cs.blocks_used, 0u) << "blocks leaked";
  rig.cache->clear_cached();
  EXPECT_EQ(rig.cache->stats().blocks_free, cs.blocks_total);
  EXPECT_EQ(rig.pool->n_free(), rig.pool->n_blocks());
  const SchedulerStats ss = s.stats();
  EXPECT_EQ(ss.requests_finished, expected.size());
  EXPECT_EQ(ss.preempted, static_cast<uint64_t>(preempted));
  // The run exercised what it is meant to.
  EXPECT_GT(cancelled, 10);
  EXPECT_GT(cached, 10);
  EXPECT_GT(refused, 10);
  std::cout << "[ note ] " << expected.size() << " requests, " << steps << " steps, " << cancelled << " cancelled, "
            << preempted << " preempted, " << cached << " with prefix hits, " << refused << " refused\n";
}

}  // namespace
}  // namespace clm
