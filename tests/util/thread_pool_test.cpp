#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
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

namespace clm {
namespace {

TEST(ThreadPool, ChunkBoundariesDependOnlyOnNAndPoolSize) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.chunk_count(1), 1u);
  EXPECT_EQ(pool.chunk_count(5), 5u);
  EXPECT_EQ(pool.chunk_count(1000), ThreadPool::kChunksPerThread * 3);
  for (int round = 0; round < 50; ++round) {
    std::mutex mu;
    std::vector<std::pair<std::size_t, std::size_t>> seen;
    pool.parallel_for(1000, [&](std::size_t b, std::size_t e) {
      std::lock_guard<std::mutex> lock(mu);
      seen.emplace_back(b, e);
    });
    std::sort(seen.begin(), seen.end());
    const std::size_t c = pool.chunk_count(1000);
    ASSERT_EQ(seen.size(), c);
    for (std::size_t i = 0; i < c; ++i) EXPECT_EQ(seen[i], std::make_pair(1000 * i / c, 1000 * (i + 1) / c));
  }
}

// A worker that stops in the middle of a loop (preempted, in real life) holds
// up only the chunk it holds: the caller claims and runs all the others. With
// one fixed share per thread the worker's share would wait for it, and this
// test would time out below instead.
TEST(ThreadPool, OthersTakeOverTheChunksOfAStalledThread) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  constexpr std::size_t kN = 64;
  bool worker_stalled = false;
  for (int attempt = 0; attempt < 200 && !worker_stalled; ++attempt) {
    std::atomic<std::size_t> caller_items{0};
    std::atomic<bool> took_over{false}, stalled{false};
    pool.parallel_for(kN, [&](std::size_t b, std::size_t e) {
      if (std::this_thread::get_id() == caller) {
        // Slow enough that the worker wakes up and claims a chunk meanwhile.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        caller_items.fetch_add(e - b);
        return;
      }
      if (stalled.exchange(true)) return;  // the worker stalls in its first chunk only
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      // A fixed half per thread would leave the caller at kN / 2.
      const std::size_t others = kN - (e - b);
      while (caller_items.load() < others && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      took_over.store(caller_items.load() == others && others > kN / 2);
    });
    if (stalled.load()) {
      worker_stalled = true;
      EXPECT_TRUE(took_over.load()) << "the caller did not run the chunks the stalled worker left";
    }
  }
  EXPECT_TRUE(worker_stalled) << "the worker never joined a loop in 200 attempts";
}

}  // namespace
}  // namespace clm
