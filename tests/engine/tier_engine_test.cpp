// Engines over a shared Redis (a real redis-server started by the test): a
// second engine's prefix hit comes from blocks the first one wrote, with
// bitwise the logits of a cold run (DESIGN promise 1 across tiers); a dead
// or restarted Redis never fails a request; a full writer queue drops.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "engine/engine.h"
#include "engine/scheduler_rig.h"
#include "kernels/kernel_test_support.h"
#include "kernels/numerics.h"
#include "support/redis_server.h"
#include "tier/redis_tier.h"

namespace clm {
namespace {

using test::RedisServer;

struct RedisSetup {
  std::string url;
  std::shared_ptr<double> clock;  // the breaker's clock, advanced by the test
};

std::unique_ptr<Engine> make_engine(const RedisSetup* redis, std::size_t queue_mb = 64) {
  EngineOptions o;
  o.load.model_path = test::shared_file("models/stories260K.gguf");
  o.scheduler.n_ctx = 256;
  o.load.n_threads = 1;
  o.pool.block_size = 16;
  o.tiers.write_queue_mb = queue_mb;
  if (redis) {
    RedisTierOptions r;
    r.address = *parse_redis_url(redis->url);
    r.command_timeout_s = 0.3;
    r.connect_timeout_s = 0.3;
    r.breaker_cooldown_s = 60.0;
    r.clock = [c = redis->clock] { return *c; };
    o.tiers.factories.push_back([r](uint64_t fingerprint, const KvGeometry& g) -> Result<std::unique_ptr<CacheTier>> {
      auto t = RedisTier::open(r, fingerprint, g);
      if (!t) return fail(t.error().message);
      return std::unique_ptr<CacheTier>(std::move(*t));
    });
  }
  auto e = Engine::create(o);
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

struct Outcome {
  std::vector<TokenEvent> events;
  RequestSummary summary;
};

Outcome run(Engine& e, const std::vector<int32_t>& prompt) {
  Outcome out;
  auto stream = e.open_stream(test::greedy_request(prompt, 4, true));
  EXPECT_TRUE(stream) << stream.error().message;
  if (!stream) return out;
  while (auto ev = (*stream)->next()) out.events.push_back(std::move(*ev));
  out.summary = (*stream)->summary();
  return out;
}

void expect_same_logits(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].id, b.events[i].id) << "step " << i;
    EXPECT_TRUE(test::bitwise_equal(a.events[i].logits, b.events[i].logits)) << "step " << i;
  }
}


std::vector<int32_t> prompt_of(Engine& e, int salt) { return test::prompt_of(100, salt, e.model().config().n_vocab); }

TEST(TierEngine, ASecondEngineHitsBlocksTheFirstWroteWithColdLogits) {
  RedisServer server;
  RedisSetup redis{server.url(), std::make_shared<double>(0.0)};
  auto cold_engine = make_engine(nullptr);
  ASSERT_TRUE(cold_engine);
  const auto prompt = prompt_of(*cold_engine, 1);
  const Outcome cold = run(*cold_engine, prompt);
  EXPECT_EQ(cold.summary.cached_tokens, 0);

  auto first = make_engine(&redis);
  ASSERT_TRUE(first);
  const Outcome a = run(*first, prompt);
  EXPECT_EQ(a.summary.cached_tokens, 0);
  first->tiers()->flush();
  const TierStats written = first->cache_stats().tiers;
  ASSERT_EQ(written.tiers.size(), 1u);
  EXPECT_EQ(written.tiers[0].name, "redis");
  EXPECT_GE(written.tiers[0].writes, 6u) << "the prompt's six full blocks";
  EXPECT_EQ(written.writes_dropped, 0u);

  auto second = make_engine(&redis);
  ASSERT_TRUE(second);
  const Outcome b = run(*second, prompt);
  EXPECT_EQ(b.summary.cached_tokens, 96) << "six blocks of sixteen, promoted from Redis";
  EXPECT_EQ(b.summary.reuse.prefix, 96);
  const EngineCacheStats st = second->cache_stats();
  EXPECT_EQ(st.tiers.blocks_promoted, 6u);
  EXPECT_EQ(st.tiers.tiers[0].hits, 6u);
  EXPECT_EQ(st.tiers.tiers[0].breaker_state, "closed");
  EXPECT_EQ(st.scheduler.prompt_tokens_computed, 4u);
  expect_same_logits(cold, a);
  expect_same_logits(cold, b);

  // Resident in RAM now: a repeat asks Redis for nothing.
  const Outcome again = run(*second, prompt);
  EXPECT_EQ(second->cache_stats().tiers.tiers[0].hits, 6u);
  EXPECT_EQ(again.summary.cached_tokens, 99);
}

// With the scheduler's loop running, submit() reads the entries into pool
// blocks the loop thread reserved for them (not buffers): the same hit, the
// same logits, and every reserved block ends up cached or free.
TEST(TierEngine, WithTheLoopRunningEntriesLandInPoolBlocksTheLoopReserved) {
  RedisServer server;
  RedisSetup redis{server.url(), std::make_shared<double>(0.0)};
  auto cold_engine = make_engine(nullptr);
  ASSERT_TRUE(cold_engine);
  const auto prompt = prompt_of(*cold_engine, 7);
  const Outcome cold = run(*cold_engine, prompt);
  auto first = make_engine(&redis);
  ASSERT_TRUE(first);
  run(*first, prompt);
  first->tiers()->flush();

  auto second = make_engine(&redis);
  ASSERT_TRUE(second);
  second->start();
  const Outcome b = run(*second, prompt);
  EXPECT_EQ(b.summary.cached_tokens, 96) << "six blocks of sixteen, promoted from Redis";
  expect_same_logits(cold, b);
  second->stop();
  const EngineCacheStats st = second->cache_stats();
  EXPECT_EQ(st.tiers.blocks_promoted, 6u);
  EXPECT_EQ(st.cache.blocks_used, 0u);
  EXPECT_EQ(st.cache.blocks_cached + st.cache.blocks_free, st.cache.blocks_total) << "no reserved block is lost";
}

// Instances whose kernels round differently (here another SIMD path, as a
// server on an older CPU would run) share a Redis without serving each other
// K/V: a hit would change the output bits. Paths of one numerics family do
// share, and their logits agree bit for bit.
TEST(TierEngine, EnginesOfOtherKernelNumericsMissWhatEachOtherWrote) {
  const auto paths = test::supported_paths();
  ASSERT_GE(paths.size(), 2u) << "every supported CPU has the scalar path and at least one SIMD path";
  // The writer runs the active path (CLMCACHE_TEST_KERNELS may force one);
  // the other reader a path of another family: scalar, or the widest where
  // the writer is scalar.
  const KernelPath wide = active_kernel_path();
  const KernelPath narrow = wide == KernelPath::Scalar ? best_kernel_path() : KernelPath::Scalar;
  ASSERT_NE(numerics_family(wide), numerics_family(narrow));
  RedisServer server;
  RedisSetup redis{server.url(), std::make_shared<double>(0.0)};
  std::vector<int32_t> prompt;
  Outcome wide_run;
  {
    auto first = make_engine(&redis);
    ASSERT_TRUE(first);
    prompt = prompt_of(*first, 11);
    wide_run = run(*first, prompt);
    first->tiers()->flush();
  }
  {
    test::ScopedKernelPath scoped(narrow);
    auto cold_engine = make_engine(nullptr);
    ASSERT_TRUE(cold_engine);
    const Outcome cold = run(*cold_engine, prompt);
    auto second = make_engine(&redis);
    ASSERT_TRUE(second);
    EXPECT_NE(second->cache_fingerprint(), cold_engine->fingerprint());
    const Outcome b = run(*second, prompt);
    EXPECT_EQ(b.summary.cached_tokens, 0) << "the wide path's blocks are not this path's";
    EXPECT_EQ(second->cache_stats().tiers.blocks_promoted, 0u);
    expect_same_logits(cold, b);
  }
  if (kernel_path_supported(KernelPath::Avx512Vnni) && numerics_family(wide) == numerics_family(KernelPath::Avx512)) {
    // Avx512 and Avx512Vnni differ only in the route to exact integer sums.
    test::ScopedKernelPath scoped(wide == KernelPath::Avx512Vnni ? KernelPath::Avx512 : KernelPath::Avx512Vnni);
    auto third = make_engine(&redis);
    ASSERT_TRUE(third);
    const Outcome c = run(*third, prompt);
    EXPECT_EQ(c.summary.cached_tokens, 96) << "six blocks of sixteen, promoted from Redis";
    expect_same_logits(wide_run, c);
  }
}

TEST(TierEngine, ADeadRedisNeverFailsARequestAndARestartedOneIsUsedAgain) {
  RedisServer server;
  RedisSetup redis{server.url(), std::make_shared<double>(0.0)};
  auto engine = make_engine(&redis);
  ASSERT_TRUE(engine);
  auto cold_engine = make_engine(nullptr);
  const auto p1 = prompt_of(*engine, 2);
  const auto p2 = prompt_of(*engine, 3);
  server.kill();
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome r1 = run(*engine, p1);
  const Outcome r2 = run(*engine, p2);
  engine->tiers()->flush();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(r1.summary.stop_reason, "length");
  EXPECT_EQ(r2.summary.stop_reason, "length");
  expect_same_logits(run(*cold_engine, p1), r1);
  TierStats s = engine->cache_stats().tiers;
  EXPECT_EQ(s.tiers[0].breaker_state, "open");
  EXPECT_EQ(s.tiers[0].writes, 0u);
  EXPECT_GE(s.tiers[0].writes_refused, 12u) << "both prompts' blocks, skipped";

  ASSERT_TRUE(server.start());
  *redis.clock += 61.0;  // the cool-down is over
  const auto p3 = prompt_of(*engine, 4);
  const Outcome r3 = run(*engine, p3);
  engine->tiers()->flush();
  s = engine->cache_stats().tiers;
  EXPECT_EQ(s.tiers[0].breaker_state, "closed");
  EXPECT_GE(s.tiers[0].writes, 6u);
  EXPECT_EQ(r3.summary.stop_reason, "length");
}

TEST(TierEngine, AFullWriterQueueDropsAndCountsWithoutBlocking) {
  RedisServer server;
  RedisSetup redis{server.url(), std::make_shared<double>(0.0)};
  auto engine = make_engine(&redis, 0);  // no room at all: every write is dropped
  ASSERT_TRUE(engine);
  const Outcome r = run(*engine, prompt_of(*engine, 5));
  EXPECT_EQ(r.summary.stop_reason, "length");
  const TierStats s = engine->cache_stats().tiers;
  EXPECT_GE(s.writes_dropped, 6u);
  EXPECT_EQ(s.writes_queued, 0u);
  EXPECT_EQ(server.command({"DBSIZE"}), "0");
}

}  // namespace
}  // namespace clm
