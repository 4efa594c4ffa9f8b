#include "util/chunk_buffers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "util/thread_pool.h"

namespace clm {
namespace {

TEST(ChunkBuffers, ClaimsHeldAtOnceGetDifferentBuffersOfTheLength) {
  ChunkBuffers b;
  b.ensure(3, 100);
  std::set<const std::vector<float>*> seen;
  {
    ChunkBuffers::Claim c1 = b.claim(), c2 = b.claim(), c3 = b.claim();
    for (auto* c : {&c1, &c2, &c3}) {
      EXPECT_GE(c->buffer().size(), 100u);
      seen.insert(&c->buffer());
    }
  }
  EXPECT_EQ(seen.size(), 3u);
  // Given back when the claims end: three more can be held again.
  ChunkBuffers::Claim again = b.claim();
  EXPECT_TRUE(seen.count(&again.buffer()));
}

TEST(ChunkBuffers, EnsureKeepsBuffersThatAreLargeEnough) {
  ChunkBuffers b;
  b.ensure(2, 64);
  const std::vector<float>* first = nullptr;
  {
    ChunkBuffers::Claim c = b.claim();
    first = &c.buffer();
    c.buffer()[0] = 5.0f;
  }
  b.ensure(2, 32);
  ChunkBuffers::Claim c = b.claim();
  EXPECT_EQ(&c.buffer(), first);
  EXPECT_EQ(c.buffer()[0], 5.0f);
}

// Every chunk of a pool's loop holds a buffer no other running chunk holds.
TEST(ChunkBuffers, NoTwoRunningChunksShareABuffer) {
  ThreadPool pool(3);
  ChunkBuffers b;
  b.ensure(static_cast<std::size_t>(pool.size()), 16);
  std::atomic<int> clashes{0};
  for (int round = 0; round < 50; ++round) {
    pool.parallel_for(64, [&](std::size_t begin, std::size_t) {
      ChunkBuffers::Claim c = b.claim();
      std::vector<float>& v = c.buffer();
      const float mark = static_cast<float>(begin + 1);
      v[0] = mark;
      std::this_thread::yield();  // a window for another chunk to write the same buffer
      if (v[0] != mark) clashes.fetch_add(1);
    });
  }
  EXPECT_EQ(clashes.load(), 0);
}

}  // namespace
}  // namespace clm
