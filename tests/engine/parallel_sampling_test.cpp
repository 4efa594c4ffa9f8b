// The rows of a step are sampled on the thread pool: every sequence's tokens,
// log-probabilities and top log-probabilities (and its prompt's scores) must
// be bitwise what it gets alone on one thread, whatever the batch around it
// or the number of threads. Seeded, temperature, top-p, top-k and penalty
// paths each keep their own random stream.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "engine/scheduler_rig.h"

namespace clm {
namespace {

using test::Recorder;
using test::Rig;
using test::RigOptions;

Model& model() { return test::synthetic_model(WeightType::Q8_0); }

// Requests that exercise every sampler stage, each with its own seed.
std::vector<Request> varied_requests() {
  const int vocab = model().config().n_vocab;
  std::vector<Request> out;
  for (int i = 0; i < 7; ++i) {
    Request r;
    r.prompt = test::prompt_of(9 + 3 * i, i, vocab);
    r.max_tokens = 6;
    r.stop_at_end_of_generation = false;
    r.top_logprobs = i % 3;
    r.sampler.seed = 1000 + static_cast<uint64_t>(i);
    switch (i % 4) {
      case 0: r.sampler.temperature = 0.0f; break;  // greedy
      case 1: r.sampler.temperature = 1.3f; r.sampler.top_k = 0; r.sampler.top_p = 0.9f; r.sampler.min_p = 0.0f; break;
      case 2: r.sampler.temperature = 0.7f; r.sampler.top_k = 20; r.sampler.repeat_penalty = 1.3f; break;
      default:
        r.sampler.temperature = 2.0f;
        r.sampler.top_k = 0;
        r.sampler.top_p = 1.0f;
        r.sampler.min_p = 0.0f;
        r.sampler.frequency_penalty = 0.5f;
        r.sampler.presence_penalty = 0.3f;
        break;
    }
    if (i == 5) r.prompt_logprobs = 2;  // its prompt rows are scored beside the others' samples
    out.push_back(std::move(r));
  }
  return out;
}

struct Outcome {
  std::vector<TokenEvent> tokens;
  std::vector<std::optional<PromptLogprob>> prompt;
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const Outcome& alone, const Outcome& batched, const std::string& where) {
  ASSERT_EQ(alone.tokens.size(), batched.tokens.size()) << where;
  for (std::size_t i = 0; i < alone.tokens.size(); ++i) {
    const TokenEvent& a = alone.tokens[i];
    const TokenEvent& b = batched.tokens[i];
    EXPECT_EQ(a.id, b.id) << where << " token " << i;
    EXPECT_TRUE(same_bits(a.logprob, b.logprob)) << where << " token " << i;
    ASSERT_EQ(a.top_logprobs.size(), b.top_logprobs.size()) << where;
    for (std::size_t k = 0; k < a.top_logprobs.size(); ++k) {
      EXPECT_EQ(a.top_logprobs[k].first, b.top_logprobs[k].first) << where << " token " << i;
      EXPECT_TRUE(same_bits(a.top_logprobs[k].second, b.top_logprobs[k].second)) << where << " token " << i;
    }
  }
  ASSERT_EQ(alone.prompt.size(), batched.prompt.size()) << where;
  for (std::size_t p = 0; p < alone.prompt.size(); ++p) {
    ASSERT_EQ(alone.prompt[p].has_value(), batched.prompt[p].has_value()) << where << " prompt " << p;
    if (!alone.prompt[p]) continue;
    const PromptLogprob& a = *alone.prompt[p];
    const PromptLogprob& b = *batched.prompt[p];
    EXPECT_TRUE(same_bits(a.logprob, b.logprob)) << where << " prompt " << p;
    ASSERT_EQ(a.top.size(), b.top.size()) << where;
    for (std::size_t k = 0; k < a.top.size(); ++k) {
      EXPECT_EQ(a.top[k].first, b.top[k].first) << where;
      EXPECT_TRUE(same_bits(a.top[k].second, b.top[k].second)) << where;
    }
  }
}

// Runs the requests together (all admitted at once) on `threads` threads.
std::vector<Outcome> run_together(const std::vector<Request>& requests, int threads) {
  RigOptions o;
  o.threads = threads;
  o.n_blocks = 128;
  Rig rig(model(), o);
  Recorder rec;
  std::vector<RequestId> ids;
  for (const Request& r : requests) {
    auto id = rec.submit(*rig.scheduler, r);
    EXPECT_TRUE(id) << id.error().message;
    ids.push_back(id ? *id : 0);
  }
  rig.scheduler->run_until_idle();
  std::vector<Outcome> out;
  for (RequestId id : ids) {
    EXPECT_EQ(rec.done[id].size(), 1u);
    out.push_back({rec.tokens[id], rec.done[id].empty() ? std::vector<std::optional<PromptLogprob>>{} : rec.done[id].front().prompt_logprobs});
  }
  return out;
}

TEST(ParallelSampling, EachRowAsIfSampledAloneOnOneThread) {
  const std::vector<Request> requests = varied_requests();
  std::vector<Outcome> alone;
  for (const Request& r : requests) alone.push_back(run_together({r}, 1).front());
  // Not every request may be greedy, or the test would not see a random stream.
  int distinct = 0;
  for (const Outcome& o : alone)
    for (std::size_t i = 1; i < o.tokens.size(); ++i) distinct += o.tokens[i].id != o.tokens[0].id;
  EXPECT_GT(distinct, 0);
  for (int threads : {1, 2, 3}) {
    const std::vector<Outcome> together = run_together(requests, threads);
    ASSERT_EQ(together.size(), alone.size());
    for (std::size_t i = 0; i < alone.size(); ++i)
      expect_same(alone[i], together[i], "request " + std::to_string(i) + ", " + std::to_string(threads) + " threads");
  }
}

// A batch whose composition changes every step (requests of different
// lengths end at different steps, and the order they run in is reversed):
// each request's random stream is still its own.
TEST(ParallelSampling, OutputsDoNotDependOnTheOtherRequestsOrTheirOrder) {
  std::vector<Request> requests = varied_requests();
  for (std::size_t i = 0; i < requests.size(); ++i) requests[i].max_tokens = 3 + static_cast<int>(i);
  const std::vector<Outcome> forward = run_together(requests, 2);
  std::vector<Request> reversed(requests.rbegin(), requests.rend());
  const std::vector<Outcome> backward = run_together(reversed, 3);
  for (std::size_t i = 0; i < requests.size(); ++i)
    expect_same(forward[i], backward[requests.size() - 1 - i], "request " + std::to_string(i));
}

}  // namespace
}  // namespace clm
