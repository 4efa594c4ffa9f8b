// EngineOptions reach the parts they configure: partial block reuse can be
// turned off, and then a repeated prompt reuses whole blocks only.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "support/test_paths.h"

namespace clm {
namespace {

TEST(EngineOptions, PartialBlockReuseCanBeTurnedOff) {
  for (bool partial : {true, false}) {
    EngineOptions o;
    o.load.model_path = test::shared_file("models/stories260K.gguf");
    o.scheduler.n_ctx = 256;
    o.load.n_threads = 1;
    o.pool.block_size = 16;
    o.cache.partial_block_reuse = partial;
    auto engine = Engine::create(o);
    ASSERT_TRUE(engine) << engine.error().message;
    const auto prompt = (*engine)->model().tokenizer().encode(
        "Once upon a time there was a little girl who lived in a small house near the big forest with her mother",
        true, false);
    ASSERT_GT(prompt.size() % 16, 1u);  // a partly filled last block to copy from
    GenerateOptions g;
    g.max_tokens = 2;
    g.sampler.temperature = 0.0f;
    const auto ignore = [](const GeneratedToken&) { return true; };
    ASSERT_TRUE((*engine)->generate(prompt, g, ignore));
    auto again = (*engine)->generate(prompt, g, ignore);
    ASSERT_TRUE(again) << again.error().message;
    const int whole_blocks = static_cast<int>((prompt.size() - 1) / 16 * 16);
    EXPECT_EQ(again->cached_tokens, partial ? static_cast<int>(prompt.size()) - 1 : whole_blocks) << partial;
    EXPECT_EQ((*engine)->cache_stats().cache.partial_block_hits, partial ? 1u : 0u);
  }
}

}  // namespace
}  // namespace clm
