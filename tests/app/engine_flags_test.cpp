// The model-loading commands' flags write the engine's option structs
// directly: no flag given leaves EngineOptions' own defaults, and every flag
// lands in the field it names, including those that had no flag before
// (--max-batch-tokens on serve and chat, --no-partial-block-reuse).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/cli_flags.h"

namespace clm {
namespace {

// Parses `args` as a command with the engine flags (and the batch flag).
EngineFlags parse(std::vector<std::string> args, bool with_batch = true) {
  CLI::App app("test");
  EngineFlags flags;
  add_engine_flags(app, flags);
  if (with_batch) add_batch_flag(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    ADD_FAILURE() << e.what();
  }
  return flags;
}

TEST(EngineFlags, NoFlagsLeaveTheEngineDefaults) {
  const EngineFlags f = parse({});
  const EngineOptions want;
  EXPECT_EQ(f.options.scheduler.n_ctx, want.scheduler.n_ctx);
  EXPECT_EQ(f.options.scheduler.max_batch_tokens, want.scheduler.max_batch_tokens);
  EXPECT_EQ(f.options.scheduler.max_running, want.scheduler.max_running);
  EXPECT_EQ(f.options.scheduler.max_queued, want.scheduler.max_queued);
  EXPECT_EQ(f.options.cache.prefix_caching, want.cache.prefix_caching);
  EXPECT_EQ(f.options.cache.partial_block_reuse, want.cache.partial_block_reuse);
  EXPECT_EQ(f.options.pool.kv_types, want.pool.kv_types);
  EXPECT_EQ(f.options.scheduler.reuse.mode, want.scheduler.reuse.mode);
  EXPECT_EQ(f.options.scheduler.reuse.lead, want.scheduler.reuse.lead);
  EXPECT_EQ(f.options.cache.hot_after_hits, want.cache.hot_after_hits);
  // And the engine's defaults are the scheduler's and the cache's.
  EXPECT_EQ(want.scheduler.max_batch_tokens, SchedulerOptions{}.max_batch_tokens);
  EXPECT_EQ(want.scheduler.max_running, SchedulerOptions{}.max_running);
  EXPECT_EQ(want.scheduler.n_ctx, SchedulerOptions{}.n_ctx);
  EXPECT_EQ(want.cache.partial_block_reuse, CacheOptions{}.partial_block_reuse);
  EXPECT_EQ(want.cache.hot_after_hits, CacheOptions{}.hot_after_hits);
}

TEST(EngineFlags, EveryFlagLandsInItsField) {
  const EngineFlags f = parse({"-c", "1024", "-t", "3", "--kv-type", "f32", "--block-size", "8", "--max-batch-tokens",
                               "64", "--no-partial-block-reuse", "--reuse", "shift", "--min-reuse-tokens", "5",
                               "--reuse-window", "100", "--reuse-lead", "2", "--blend-layer", "3", "--kv-memory-mb",
                               "12", "--parallel", "5", "--cache-hot-after", "4", "--cache-ttl", "2.5"});
  EXPECT_EQ(f.options.scheduler.n_ctx, 1024);
  EXPECT_EQ(f.options.load.n_threads, 3);
  EXPECT_EQ(f.options.pool.kv_types, KvType::F32);
  EXPECT_EQ(f.options.pool.block_size, 8);
  EXPECT_EQ(f.options.scheduler.max_batch_tokens, 64);
  EXPECT_FALSE(f.options.cache.partial_block_reuse);
  EXPECT_TRUE(f.options.cache.prefix_caching);
  EXPECT_EQ(f.options.scheduler.reuse.mode, ReuseMode::Shift);
  EXPECT_EQ(f.options.scheduler.reuse.min_reuse_tokens, 5);
  EXPECT_EQ(f.options.scheduler.reuse.window, 100);
  EXPECT_EQ(f.options.scheduler.reuse.lead, 2);
  EXPECT_EQ(f.options.scheduler.reuse.blend_layer, 3);
  EXPECT_EQ(f.options.pool.kv_memory_mb, 12u);
  EXPECT_EQ(f.options.scheduler.max_running, 5);
  EXPECT_EQ(f.options.cache.hot_after_hits, 4u);
  EXPECT_DOUBLE_EQ(f.options.cache.ttl_seconds, 2.5);
  EXPECT_FALSE(parse({"--no-prefix-cache"}).options.cache.prefix_caching);
}

// K and V each take their own type; --kv-type sets both.
TEST(EngineFlags, CacheTypesLandInTheirFields) {
  EXPECT_EQ(parse({"--cache-type-k", "q8_0"}).options.pool.kv_types, (KvTypes{KvType::Q8_0, KvType::F16}));
  EXPECT_EQ(parse({"--cache-type-v", "q8_0"}).options.pool.kv_types, (KvTypes{KvType::F16, KvType::Q8_0}));
  EXPECT_EQ(parse({"--cache-type-k", "f32", "--cache-type-v", "q8_0"}).options.pool.kv_types,
            (KvTypes{KvType::F32, KvType::Q8_0}));
  EXPECT_EQ(parse({"--kv-type", "q8_0"}).options.pool.kv_types, KvTypes{KvType::Q8_0});
  EXPECT_EQ(parse({"--cache-type-k", "q8_0", "--cache-type-v", "q4_0"}).options.pool.kv_types,
            (KvTypes{KvType::Q8_0, KvType::Q4_0}));
  EXPECT_EQ(parse({"--kv-type", "q4_0"}).options.pool.kv_types, KvTypes{KvType::Q4_0});
  EXPECT_EQ(parse({"--cache-type-k", "fp8", "--cache-type-v", "f16"}).options.pool.kv_types,
            (KvTypes{KvType::Fp8, KvType::F16}));
}

TEST(EngineFlags, BadValuesAreRefusedByName) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--max-batch-tokens", "0"}, {"--kv-type", "q8"}, {"--reuse", "mix"}, {"--no-prefix-cache", "--reuse", "off"},
           {"--cache-type-k", "q4_1"}, {"--cache-type-v", "Q8_0"}, {"--cache-type-v", "Q4_0"},
           {"--kv-type", "f16", "--cache-type-k", "q8_0"}}) {
    CLI::App app("test");
    EngineFlags flags;
    add_engine_flags(app, flags);
    add_batch_flag(app, flags);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    EXPECT_THROW(app.parse(reversed), CLI::ParseError) << args[0];
  }
}

}  // namespace
}  // namespace clm
