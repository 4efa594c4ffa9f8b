// Engine::generate runs on the scheduler: a repeated prompt is served from the
// prefix cache with the same tokens, and the stats say so.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "support/test_paths.h"

namespace clm {
namespace {

std::unique_ptr<Engine> make_engine(bool prefix_cache) {
  EngineOptions o;
  o.load.model_path = test::shared_file("models/stories260K.gguf");
  o.scheduler.n_ctx = 256;
  o.load.n_threads = 1;
  o.pool.block_size = 16;
  o.cache.prefix_caching = prefix_cache;
  auto e = Engine::create(o);
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

TEST(Engine, RepeatedPromptHitsThePrefixCache) {
  for (bool prefix : {true, false}) {
    auto engine = make_engine(prefix);
    ASSERT_TRUE(engine);
    const auto prompt = engine->model().tokenizer().encode(
        "Once upon a time there was a little girl who lived in a small house near the big forest with her mother",
        true, false);
    ASSERT_GT(prompt.size(), 16u);
    GenerateOptions g;
    g.max_tokens = 8;
    g.stop_at_end_of_generation = false;
    g.sampler.temperature = 0.0f;
    std::vector<int32_t> first, second;
    auto a = engine->generate(prompt, g, [&](const GeneratedToken& t) {
      first.push_back(t.id);
      return true;
    });
    ASSERT_TRUE(a) << a.error().message;
    auto b = engine->generate(prompt, g, [&](const GeneratedToken& t) {
      second.push_back(t.id);
      return true;
    });
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(first, second);
    EXPECT_EQ(a->cached_tokens, 0);
    // Everything but the last prompt token: whole blocks shared, the rest
    // copied from the first run's kept blocks; it is computed for its logits.
    EXPECT_EQ(b->cached_tokens, prefix ? static_cast<int>(prompt.size()) - 1 : 0);
    EXPECT_EQ(b->stop_reason, "length");
    const EngineCacheStats st = engine->cache_stats();
    EXPECT_EQ(st.scheduler.requests_finished, 2u);
    EXPECT_EQ(st.scheduler.generated_tokens, 16u);
    EXPECT_EQ(st.cache.reused_tokens, static_cast<uint64_t>(b->cached_tokens));
    EXPECT_EQ(st.cache.blocks_used, 0u);
    EXPECT_EQ(st.cache.blocks_cached > 0, prefix);
  }
}

TEST(Engine, RefusesWhatDoesNotFitWithAClearError) {
  auto engine = make_engine(true);
  ASSERT_TRUE(engine);
  std::vector<int32_t> too_long(300, 5);
  auto r = engine->generate(too_long, GenerateOptions{}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("context"), std::string::npos);
  EngineOptions bad;
  bad.load.model_path = test::shared_file("models/stories260K.gguf");
  bad.scheduler.max_batch_tokens = 0;
  EXPECT_FALSE(Engine::create(bad));
  for (int field = 0; field < 3; ++field) {
    EngineOptions reuse;
    reuse.load.model_path = bad.load.model_path;
    if (field == 0) reuse.scheduler.reuse.min_reuse_tokens = 0;
    if (field == 1) reuse.scheduler.reuse.window = -1;
    if (field == 2) reuse.scheduler.reuse.lead = -1;
    const auto e = Engine::create(reuse);
    ASSERT_FALSE(e) << "field " << field;
    EXPECT_NE(e.error().message.find("reuse"), std::string::npos) << e.error().message;
  }
}

}  // namespace
}  // namespace clm
