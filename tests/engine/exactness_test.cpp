// DESIGN promise 1 through the scheduler: a prefix-cache hit, the company of
// other sequences and the prefill chunking never change a logit, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "engine/scheduler_rig.h"

namespace clm {
namespace {

using test::bitwise_equal;
using test::greedy_request;
using test::Recorder;
using test::Rig;
using test::RigOptions;

struct Case {
  std::vector<int32_t> prompt;
  int max_tokens;
};

// Eight prompts of different lengths; three share the first 40 tokens of the
// first, so prefix hits also happen while they run together.
std::vector<Case> cases(int vocab) {
  std::vector<Case> out;
  out.push_back({test::prompt_of(77, 0, vocab), 12});
  for (int s = 1; s < 8; ++s) {
    std::vector<int32_t> p = test::prompt_of(5 + 13 * s, s, vocab);
    if (s >= 5) {
      std::vector<int32_t> shared(out[0].prompt.begin(), out[0].prompt.begin() + 40);
      shared.insert(shared.end(), p.begin() + 1, p.end());
      p = shared;
    }
    out.push_back({p, 4 + s});
  }
  return out;
}

// Runs the requests together; returns each one's token events.
std::vector<std::vector<TokenEvent>> run_together(Model& model, KvTypes kv, const std::vector<Case>& cs,
                                                  int max_batch_tokens, bool prefix_caching) {
  RigOptions o;
  o.kv_types = kv;
  o.prefix_caching = prefix_caching;
  o.scheduler.max_batch_tokens = max_batch_tokens;
  o.scheduler.n_ctx = 256;
  Rig rig(model, o);
  Recorder rec;
  std::vector<RequestId> ids;
  for (const Case& c : cs) {
    auto id = rec.submit(*rig.scheduler, greedy_request(c.prompt, c.max_tokens, true));
    EXPECT_TRUE(id) << id.error().message;
    ids.push_back(*id);
  }
  rig.scheduler->run_until_idle();
  std::vector<std::vector<TokenEvent>> out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(rec.done[ids[i]].size(), 1u);
    EXPECT_EQ(rec.tokens[ids[i]].size(), static_cast<std::size_t>(cs[i].max_tokens));
    out.push_back(rec.tokens[ids[i]]);
  }
  return out;
}

void expect_same(const std::vector<TokenEvent>& got, const std::vector<TokenEvent>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id) << what << ", step " << i;
    ASSERT_FALSE(got[i].logits.empty()) << what;
    EXPECT_TRUE(bitwise_equal(got[i].logits, want[i].logits)) << what << ", logits of step " << i;
  }
}

void check_prefix_hit(Model& model, KvTypes kv) {
  RigOptions o;
  o.kv_types = kv;
  o.scheduler.n_ctx = 256;
  Rig rig(model, o);
  Recorder rec;
  const auto prompt = test::prompt_of(77, 3, model.config().n_vocab);
  auto cold = rec.submit(*rig.scheduler, greedy_request(prompt, 10, true));
  ASSERT_TRUE(cold);
  rig.scheduler->run_until_idle();
  auto warm = rec.submit(*rig.scheduler, greedy_request(prompt, 10, true));
  ASSERT_TRUE(warm);
  rig.scheduler->run_until_idle();
  EXPECT_EQ(rec.done[*cold].at(0).cached_tokens, 0);
  // 77 tokens in blocks of 16: four whole blocks are attached, then the first
  // 12 tokens of the cold run's fifth block are copied; only the last token
  // is computed.
  EXPECT_EQ(rec.done[*warm].at(0).cached_tokens, 76);
  expect_same(rec.tokens[*warm], rec.tokens[*cold], "prefix hit vs cold");
}

void check_batching_and_chunking(Model& model, KvTypes kv) {
  const auto cs = cases(model.config().n_vocab);
  // Reference: each request alone in an empty cache, whole prompt in one call.
  std::vector<std::vector<TokenEvent>> alone;
  for (const Case& c : cs) alone.push_back(run_together(model, kv, {c}, 4096, false)[0]);
  for (int mbt : {1, 7, 32, 4096}) {
    for (bool prefix : {false, true}) {
      const auto together = run_together(model, kv, cs, mbt, prefix);
      for (std::size_t i = 0; i < cs.size(); ++i)
        expect_same(together[i], alone[i],
                    "request " + std::to_string(i) + " with 7 others, max_batch_tokens " + std::to_string(mbt) +
                        (prefix ? ", prefix cache" : ""));
    }
  }
}

// Within one pair of K/V types a hit equals a cold run bit for bit: q8_0
// and q4_0 rows hold per-token bytes, so a block filled one decode step at a time
// holds what a prefill of it holds.
class SchedulerExactness : public ::testing::TestWithParam<KvTypes> {};

TEST_P(SchedulerExactness, RealModelPrefixHitIsBitwiseIdentical) { check_prefix_hit(test::real_model(), GetParam()); }

TEST_P(SchedulerExactness, Q8SyntheticModelPrefixHitIsBitwiseIdentical) {
  check_prefix_hit(test::synthetic_model(WeightType::Q8_0), GetParam());
}

TEST_P(SchedulerExactness, RealModelBatchingAndChunkingAreBitwiseIdentical) {
  check_batching_and_chunking(test::real_model(), GetParam());
}

TEST_P(SchedulerExactness, Q8SyntheticModelBatchingAndChunkingAreBitwiseIdentical) {
  check_batching_and_chunking(test::synthetic_model(WeightType::Q8_0), GetParam());
}

INSTANTIATE_TEST_SUITE_P(KvTypes, SchedulerExactness,
                         ::testing::Values(KvTypes{KvType::F16}, KvTypes{KvType::F32}, KvTypes{KvType::Q8_0},
                                           KvTypes{KvType::Q8_0, KvType::F16}, KvTypes{KvType::Q4_0},
                                           KvTypes{KvType::Q8_0, KvType::Q4_0}, KvTypes{KvType::Fp8},
                                           KvTypes{KvType::F16, KvType::Fp8}),
                         [](const auto& param_info) {
                           std::string name = kv_types_text(param_info.param);
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace clm
