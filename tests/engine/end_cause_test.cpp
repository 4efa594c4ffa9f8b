// Truthful counters: under KV pool pressure every request is one sequence,
// however often its admission had to wait; each cancellation is counted once
// under its cause; a preemption is counted and reported in the summary; and
// a refused submit says why by its kind, not only in words.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/scheduler_rig.h"

namespace clm {
namespace {

using test::greedy_request;
using test::Recorder;
using test::Rig;
using test::RigOptions;

Model& tiny() { return test::synthetic_model(WeightType::F32); }
int vocab() { return tiny().config().n_vocab; }

uint64_t total(const CancelCounts& c) { return std::accumulate(c.begin(), c.end(), uint64_t{0}); }

TEST(EndCause, NRequestsUnderPoolPressureAreNSequences) {
  // 8 blocks of 16 tokens; each request needs 4 at admission, so most of
  // them wait in the queue through many steps whose admission fails.
  RigOptions o;
  o.n_blocks = 8;
  o.scheduler.max_running = 8;
  Rig rig(tiny(), o);
  Recorder rec;
  const int n = 12;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(rec.submit(*rig.scheduler, greedy_request(test::prompt_of(50, i + 1, vocab()), 6)));
  int steps = 0;
  while (rig.scheduler->step()) ++steps;
  EXPECT_GT(steps, n);  // admissions were retried step after step
  EXPECT_EQ(rig.cache->stats().sequences, static_cast<uint64_t>(n));
  EXPECT_EQ(rig.scheduler->cache_stats().sequences, static_cast<uint64_t>(n));
  EXPECT_EQ(rig.scheduler->stats().requests_finished, static_cast<uint64_t>(n));
  EXPECT_EQ(rig.scheduler->stats().cancelled, 0u);
}

TEST(EndCause, CancellationsAreCountedOnceByCause) {
  RigOptions o;
  o.scheduler.max_running = 1;
  Rig rig(tiny(), o);
  Recorder rec;
  auto running = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(20, 1, vocab()), 50));
  auto queued = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(20, 2, vocab()), 50));
  auto stopped = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(20, 3, vocab()), 50));
  ASSERT_TRUE(running && queued && stopped);
  ASSERT_TRUE(rig.scheduler->step());
  rig.scheduler->cancel(*running, CancelCause::Client);
  rig.scheduler->cancel(*running, CancelCause::Deadline);  // already ending: not counted again
  rig.scheduler->cancel(*queued, CancelCause::Deadline);
  ASSERT_TRUE(rig.scheduler->step());
  // The third is running now; it is stopped by a stop string, then the
  // scheduler shuts down with one more queued.
  auto last = rec.submit(*rig.scheduler, greedy_request(test::prompt_of(20, 4, vocab()), 50));
  ASSERT_TRUE(last);
  ASSERT_TRUE(rig.scheduler->step());
  rig.scheduler->cancel(*stopped, CancelCause::StopString);
  ASSERT_TRUE(rig.scheduler->step());
  rig.scheduler->stop();

  const SchedulerStats s = rig.scheduler->stats();
  EXPECT_EQ(s.cancelled, 4u);
  EXPECT_EQ(total(s.cancelled_by), 4u);
  EXPECT_EQ(s.cancelled_by[static_cast<std::size_t>(CancelCause::Client)], 1u);
  EXPECT_EQ(s.cancelled_by[static_cast<std::size_t>(CancelCause::Deadline)], 1u);
  EXPECT_EQ(s.cancelled_by[static_cast<std::size_t>(CancelCause::StopString)], 1u);
  EXPECT_EQ(s.cancelled_by[static_cast<std::size_t>(CancelCause::Shutdown)], 1u);
  const std::pair<RequestId, CancelCause> want[] = {{*running, CancelCause::Client},
                                                    {*queued, CancelCause::Deadline},
                                                    {*stopped, CancelCause::StopString},
                                                    {*last, CancelCause::Shutdown}};
  for (const auto& [id, cause] : want) {
    ASSERT_EQ(rec.done[id].size(), 1u) << id;
    EXPECT_EQ(rec.done[id][0].stop_reason, "cancelled");
    EXPECT_EQ(rec.done[id][0].cancel_cause, cause) << id;
    EXPECT_FALSE(rec.done[id][0].preempt_cause);
  }
  EXPECT_EQ(to_string(CancelCause::Client), "client_gone");
  EXPECT_EQ(to_string(CancelCause::Shutdown), "shutdown");
}

TEST(EndCause, APreemptionIsCountedAndReported) {
  // 6 blocks of 4 tokens: two sequences each grow past half the pool.
  RigOptions o;
  o.n_blocks = 6;
  o.block_size = 4;
  o.prefix_caching = false;
  Rig rig(tiny(), o);
  Recorder rec;
  auto a = rec.submit(*rig.scheduler, greedy_request({1, 5, 9}, 40));
  auto b = rec.submit(*rig.scheduler, greedy_request({1, 6, 10}, 10));
  ASSERT_TRUE(a && b);
  rig.scheduler->run_until_idle();
  ASSERT_EQ(rec.done[*a].size(), 1u);
  ASSERT_EQ(rec.done[*b].size(), 1u);
  // b wants only 10 tokens and ends on its own; a outgrows the pool.
  EXPECT_FALSE(rec.done[*b][0].preempt_cause);
  EXPECT_EQ(rec.done[*a][0].preempt_cause, PreemptCause::KvCacheFull);
  EXPECT_EQ(rec.done[*a][0].stop_reason, "length");
  const SchedulerStats s = rig.scheduler->stats();
  EXPECT_EQ(s.preempted, 1u);
  EXPECT_EQ(s.preempted_by[static_cast<std::size_t>(PreemptCause::KvCacheFull)], 1u);
  EXPECT_EQ(s.cancelled, 0u);
}

TEST(EndCause, RefusedSubmitsSayWhyByKind) {
  RigOptions o;
  o.scheduler.max_queued = 1;
  o.scheduler.n_ctx = 64;
  Rig rig(tiny(), o);
  EXPECT_EQ(rig.scheduler->submit(greedy_request({}, 2), nullptr, nullptr).error().kind, ErrorKind::InvalidRequest);
  EXPECT_EQ(rig.scheduler->submit(greedy_request({1, vocab()}, 2), nullptr, nullptr).error().kind,
            ErrorKind::InvalidRequest);
  EXPECT_EQ(rig.scheduler->submit(greedy_request(test::prompt_of(65, 1, vocab()), 2), nullptr, nullptr).error().kind,
            ErrorKind::ContextExceeded);
  ASSERT_TRUE(rig.scheduler->submit(greedy_request({1, 5}, 2), nullptr, nullptr));
  EXPECT_EQ(rig.scheduler->submit(greedy_request({1, 6}, 2), nullptr, nullptr).error().kind, ErrorKind::Overloaded);
  rig.scheduler->stop();
  EXPECT_EQ(rig.scheduler->submit(greedy_request({1, 6}, 2), nullptr, nullptr).error().kind, ErrorKind::Unavailable);
}

}  // namespace
}  // namespace clm
