#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace clm {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (std::size_t n : {1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPool, ReusableManyTimes) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int round = 0; round < 500; ++round)
    pool.parallel_for(10, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) sum.fetch_add(static_cast<long>(i));
    });
  EXPECT_EQ(sum.load(), 500L * 45L);
}

// Workers poll for a while, then sleep: loops that come long after the last
// one (workers asleep) and right after it (workers polling) both complete.
TEST(ThreadPool, HandsOffWhetherWorkersSpinOrSleep) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int round = 0; round < 20; ++round) {
    if (round % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    pool.parallel_for(6, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) sum.fetch_add(static_cast<long>(i));
    });
  }
  EXPECT_EQ(sum.load(), 20L * 15L);
}

// A caller slower than the workers' spin bound still gets every chunk done.
TEST(ThreadPool, WaitsForSlowChunks) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  pool.parallel_for(2, [&](std::size_t b, std::size_t) {
    if (b != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
}

}  // namespace
}  // namespace clm
