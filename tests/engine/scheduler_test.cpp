// Scheduler behaviour: admission order, queueing on memory, limits, refusals,
// cancellation from every side, stop() with work in flight, preemption and
// the token stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <future>
#include <thread>

#include "engine/scheduler_rig.h"

namespace clm {
namespace {

using test::greedy_request;
using test::Recorder;
using test::Rig;
using test::RigOptions;

Model& tiny() { return test::synthetic_model(WeightType::F32); }
int vocab() { return tiny().config().n_vocab; }

TEST(Scheduler, AdmitsInSubmissionOrder) {
  RigOptions o;
  o.scheduler.max_running = 1;
  Rig rig(tiny(), o);
  std::vector<RequestId> order;  // request of each token, in the order produced
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) {
    auto slot = std::make_shared<RequestId>();
    auto id = rig.scheduler->submit(
        greedy_request(test::prompt_of(10 + i, i, vocab()), 3),
        [&order, slot](const TokenEvent&) {
          order.push_back(*slot);
          return true;
        },
        nullptr);
    ASSERT_TRUE(id);
    *slot = *id;
    ids.push_back(*id);
  }
  EXPECT_EQ(rig.scheduler->stats().queued, 4);
  rig.scheduler->run_until_idle();
  // One at a time, never interleaved, first come first served.
  std::vector<RequestId> want;
  for (RequestId id : ids) want.insert(want.end(), 3, id);
  EXPECT_EQ(order, want);
  const SchedulerStats s = rig.scheduler->stats();
  EXPECT_EQ(s.requests_finished, 4u);
  EXPECT_EQ(s.generated_tokens, 12u);
  EXPECT_EQ(s.running, 0);
  EXPECT_GT(s.ttft_p95_s, 0.0);
  EXPECT_GE(s.ttft_p95_s, s.ttft_p50_s);
}

TEST(Scheduler, QueuesWhenThePoolIsShortAndRunsEveryoneEventually) {
  // 6 blocks of 16 tokens; each request needs 4 blocks at admission (prompt
  // 50 + 1), so the second waits until the first has released its blocks.
  RigOptions o;
  o.n_blocks = 6;
  o.prefix_caching = false;
  Rig rig(tiny(), o);
  Recorder rec;
  auto a = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(50, 1, vocab()), 5));
  auto b = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(50, 2, vocab()), 5));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(rig.scheduler->step());
  EXPECT_EQ(rig.scheduler->stats().running, 1);
  EXPECT_EQ(rig.scheduler->stats().queued, 1);
  rig.scheduler->run_until_idle();
  ASSERT_EQ(rec.done[*a].size(), 1u);
  ASSERT_EQ(rec.done[*b].size(), 1u);
  EXPECT_EQ(rec.done[*b][0].stop_reason, "length");
  EXPECT_EQ(rec.tokens[*b].size(), 5u);
  // b produced nothing before a was done and had given its blocks back.
  const auto a_done = std::find(rec.log.begin(), rec.log.end(), std::make_pair(*a, 'd'));
  const auto b_first = std::find(rec.log.begin(), rec.log.end(), std::make_pair(*b, 't'));
  EXPECT_LT(a_done - rec.log.begin(), b_first - rec.log.begin());
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
}

TEST(Scheduler, RefusesInvalidRequestsWithClearErrors) {
  RigOptions o;
  o.n_blocks = 4;  // 64 tokens of room
  o.scheduler.n_ctx = 100;
  Rig rig(tiny(), o);
  auto expect_refused = [&](Request r, const std::string& words) {
    bool called = false;
    auto id = rig.scheduler->submit(std::move(r), nullptr, [&](const RequestSummary&) { called = true; });
    ASSERT_FALSE(id);
    EXPECT_NE(id.error().message.find(words), std::string::npos) << id.error().message;
    EXPECT_FALSE(called);
  };
  expect_refused(greedy_request({}, 4), "empty prompt");
  expect_refused(greedy_request({1, vocab(), 2}, 4), "outside the vocabulary");
  expect_refused(greedy_request({1, -3}, 4), "outside the vocabulary");
  expect_refused(greedy_request(test::prompt_of(101, 0, vocab()), 4), "more than the context size");
  expect_refused(greedy_request(test::prompt_of(70, 0, vocab()), 4), "more than the whole cache");
  expect_refused(greedy_request({1, 2}, -1), "max_tokens");
  Request bad_top = greedy_request({1, 2}, 4);
  bad_top.top_logprobs = vocab() + 1;
  expect_refused(bad_top, "top_logprobs");
  EXPECT_EQ(rig.scheduler->stats().queued, 0);
  // A prompt of exactly n_ctx tokens is computed and generates nothing.
  RigOptions small;
  small.scheduler.n_ctx = 20;
  Rig rig2(tiny(), small);
  Recorder rec;
  auto full = rec.submit(*rig2.scheduler, greedy_request(test::prompt_of(20, 0, vocab()), 4));
  ASSERT_TRUE(full);
  rig2.scheduler->run_until_idle();
  EXPECT_TRUE(rec.tokens[*full].empty());
  EXPECT_EQ(rec.done[*full].at(0).stop_reason, "length");
}

TEST(Scheduler, FullQueueRefusesSubmit) {
  RigOptions o;
  o.scheduler.max_queued = 2;
  Rig rig(tiny(), o);
  ASSERT_TRUE(rig.scheduler->submit(greedy_request({1, 5}, 2), nullptr, nullptr));
  ASSERT_TRUE(rig.scheduler->submit(greedy_request({1, 6}, 2), nullptr, nullptr));
  auto third = rig.scheduler->submit(greedy_request({1, 7}, 2), nullptr, nullptr);
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().message.find("queue full"), std::string::npos) << third.error().message;
  rig.scheduler->run_until_idle();
  EXPECT_TRUE(rig.scheduler->submit(greedy_request({1, 7}, 2), nullptr, nullptr));
}

TEST(Scheduler, CancelsQueuedAndRunningRequestsExactlyOnce) {
  RigOptions o;
  o.scheduler.max_running = 1;
  Rig rig(tiny(), o);
  Recorder rec;
  auto running = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(30, 1, vocab()), 50));
  auto queued = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(30, 2, vocab()), 50));
  ASSERT_TRUE(running && queued);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(rig.scheduler->step());
  EXPECT_GT(rig.cache->stats().blocks_used, 0u);
  rig.scheduler->cancel(*queued);
  rig.scheduler->cancel(*running);
  rig.scheduler->cancel(*running);  // twice: still one done callback
  rig.scheduler->cancel(12345);     // unknown: ignored
  rig.scheduler->run_until_idle();
  ASSERT_EQ(rec.done[*queued].size(), 1u);
  ASSERT_EQ(rec.done[*running].size(), 1u);
  EXPECT_EQ(rec.done[*queued][0].stop_reason, "cancelled");
  EXPECT_EQ(rec.done[*running][0].stop_reason, "cancelled");
  EXPECT_TRUE(rec.tokens[*queued].empty());
  EXPECT_EQ(rec.tokens[*running].size(), 4u);  // step 1 read the prompt and sampled the first
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
  EXPECT_TRUE(rig.scheduler->running().empty());
}

TEST(Scheduler, CallbackReturningFalseCancels) {
  Rig rig(tiny(), RigOptions{});
  int seen = 0;
  std::vector<RequestSummary> done;
  auto id = rig.scheduler->submit(
      greedy_request(test::prompt_of(12, 0, vocab()), 20), [&](const TokenEvent&) { return ++seen < 4; },
      [&](const RequestSummary& s) { done.push_back(s); });
  ASSERT_TRUE(id);
  rig.scheduler->run_until_idle();
  EXPECT_EQ(seen, 4);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].stop_reason, "cancelled");
  EXPECT_EQ(done[0].generated_tokens, 4);
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
}

TEST(Scheduler, CancelFromAnotherThreadWhileTheLoopRuns) {
  Rig rig(tiny(), RigOptions{});
  std::promise<void> first_token;
  std::atomic<bool> signalled{false};
  std::promise<RequestSummary> finished;
  std::atomic<int> done_calls{0};
  rig.scheduler->start();
  auto id = rig.scheduler->submit(
      greedy_request(test::prompt_of(12, 0, vocab()), 2000),
      [&](const TokenEvent&) {
        if (!signalled.exchange(true)) first_token.set_value();
        return true;
      },
      [&](const RequestSummary& s) {
        if (done_calls.fetch_add(1) == 0) finished.set_value(s);
      });
  ASSERT_TRUE(id);
  first_token.get_future().wait();
  rig.scheduler->cancel(*id);
  const RequestSummary s = finished.get_future().get();
  EXPECT_EQ(s.stop_reason, "cancelled");
  EXPECT_LT(s.generated_tokens, 2000);
  rig.scheduler->stop();
  EXPECT_EQ(done_calls.load(), 1);
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
}

TEST(Scheduler, StopCancelsEverythingInFlight) {
  RigOptions o;
  o.scheduler.max_running = 2;
  Rig rig(tiny(), o);
  std::mutex mu;
  std::map<RequestId, int> done_calls;
  std::map<RequestId, StopReason> reasons;
  std::promise<void> first_token;
  std::atomic<bool> signalled{false};
  rig.scheduler->start();
  for (int i = 0; i < 5; ++i) {
    auto id = rig.scheduler->submit(
        greedy_request(test::prompt_of(12, i, vocab()), 2000),
        [&](const TokenEvent&) {
          if (!signalled.exchange(true)) first_token.set_value();
          return true;
        },
        [&](const RequestSummary& s) {
          std::lock_guard lock(mu);
          ++done_calls[s.id];
          reasons[s.id] = s.stop_reason;
        });
    ASSERT_TRUE(id);
  }
  first_token.get_future().wait();
  rig.scheduler->stop();
  ASSERT_EQ(done_calls.size(), 5u);
  for (const auto& [id, n] : done_calls) {
    EXPECT_EQ(n, 1) << "request " << id;
    EXPECT_EQ(reasons[id], "cancelled") << "request " << id;
  }
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
  auto late = rig.scheduler->submit(greedy_request({1, 2}, 2), nullptr, nullptr);
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message.find("stopped"), std::string::npos);
}

TEST(Scheduler, PreemptsASequenceThatCannotGrow) {
  // 6 blocks of 4 tokens: two sequences each grow past half the pool.
  RigOptions o;
  o.n_blocks = 6;
  o.block_size = 4;
  o.prefix_caching = false;
  Rig rig(tiny(), o);
  Recorder rec;
  auto a = rec.submit(*rig.scheduler, greedy_request({1, 5, 9}, 40));
  auto b = rec.submit(*rig.scheduler, greedy_request({1, 6, 10}, 40));
  ASSERT_TRUE(a && b);
  rig.scheduler->run_until_idle();
  for (RequestId id : {*a, *b}) {
    ASSERT_EQ(rec.done[id].size(), 1u);
    EXPECT_EQ(rec.done[id][0].stop_reason, "length");
    EXPECT_NE(rec.done[id][0].note.find("KV cache is full"), std::string::npos);
  }
  // They grow in step to 3 blocks (12 slots) each; a, first in line, cannot
  // get a fourth and ends with 3 prompt + 9 computed + 1 sampled tokens; b
  // takes a's blocks in the same step and ends when all 24 slots are full.
  EXPECT_EQ(rec.tokens[*a].size(), 10u);
  EXPECT_EQ(rec.tokens[*b].size(), 22u);
  EXPECT_EQ(rig.scheduler->stats().preempted, 2u);
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
}

TEST(Scheduler, TokenStreamPullsWithAndWithoutALoop) {
  Rig rig(tiny(), RigOptions{});
  Recorder rec;
  const auto prompt = test::prompt_of(20, 4, vocab());
  auto ref = rec.submit(*rig.scheduler, greedy_request(prompt, 9));
  ASSERT_TRUE(ref);
  rig.scheduler->run_until_idle();
  std::vector<int32_t> want;
  for (const auto& ev : rec.tokens[*ref]) want.push_back(ev.id);

  for (bool loop : {false, true}) {
    if (loop) rig.scheduler->start();
    auto stream = TokenStream::open(*rig.scheduler, greedy_request(prompt, 9));
    ASSERT_TRUE(stream) << stream.error().message;
    std::vector<int32_t> got;
    while (auto ev = (*stream)->next()) got.push_back(ev->id);
    EXPECT_EQ(got, want) << (loop ? "with loop" : "pulled");
    EXPECT_EQ((*stream)->summary().stop_reason, "length");
    EXPECT_EQ((*stream)->summary().generated_tokens, 9);
    EXPECT_FALSE((*stream)->next().has_value());
  }
  // Dropped early: the request is cancelled and its blocks come back.
  {
    auto stream = TokenStream::open(*rig.scheduler, greedy_request(prompt, 5000));
    ASSERT_TRUE(stream);
    ASSERT_TRUE((*stream)->next().has_value());
  }
  rig.scheduler->stop();
  EXPECT_EQ(rig.cache->stats().blocks_used, 0u);
  EXPECT_EQ(rig.scheduler->stats().running, 0);

  auto refused = TokenStream::open(*rig.scheduler, greedy_request({}, 5));
  EXPECT_FALSE(refused);
}

// Event-driven callers: poll() never blocks, and on_ready says when to call
// it again; the tokens are the same as pulled ones.
TEST(Scheduler, TokenStreamPollsWhenToldItIsReady) {
  Rig rig(tiny(), RigOptions{});
  const auto prompt = test::prompt_of(20, 4, vocab());
  std::vector<int32_t> want;
  {
    auto pulled = TokenStream::open(*rig.scheduler, greedy_request(prompt, 9));
    ASSERT_TRUE(pulled);
    while (auto ev = (*pulled)->next()) want.push_back(ev->id);
  }
  rig.scheduler->start();
  std::mutex mu;
  std::condition_variable cv;
  int readies = 0;
  auto stream = TokenStream::open(*rig.scheduler, greedy_request(prompt, 9), [&] {
    std::lock_guard lock(mu);
    ++readies;
    cv.notify_all();
  });
  ASSERT_TRUE(stream) << stream.error().message;
  std::vector<int32_t> got;
  int seen = 0;
  for (;;) {
    TokenEvent ev;
    const TokenStream::Poll p = (*stream)->poll(ev);
    if (p == TokenStream::Poll::Ended) break;
    if (p == TokenStream::Poll::Token) {
      got.push_back(ev.id);
      continue;
    }
    // Pending: wait for news rather than spin.
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return readies > seen; }));
    seen = readies;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ((*stream)->summary().stop_reason, "length");
  std::lock_guard lock(mu);
  EXPECT_EQ(readies, 10);  // one per token and one at the end
  rig.scheduler->stop();
}

}  // namespace
}  // namespace clm
