// The landing handshake on its own: an ask waits for the stepping thread's
// answer, gets what the pool can give, blocks handed back are freed at the
// next serve, and a closed desk refuses waiting and later asks.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "engine/landing_desk.h"

namespace clm {
namespace {

struct Rig {
  Rig() {
    auto p = KvPool::create(KvGeometry{1, 1, 8, 4, KvType::F16}, 4);
    EXPECT_TRUE(p);
    pool = std::move(*p);
    cache = std::make_unique<KvCacheManager>(*pool, 1, CacheOptions{});
  }
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvCacheManager> cache;
  std::atomic<int> wakes{0};
  LandingDesk desk{[this] { ++wakes; }};
};

// Serves until the ask has been answered.
template <class T>
T served(Rig& rig, std::future<T>& answer) {
  while (answer.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (rig.desk.has_work()) rig.desk.serve(*rig.cache);
  }
  return answer.get();
}

TEST(LandingDesk, AnAskGetsWhatThePoolHasAndHandedBackBlocksAreFreed) {
  Rig rig;
  auto first = std::async(std::launch::async, [&] { return rig.desk.ask(3); });
  const auto three = served(rig, first);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->size(), 3u);
  EXPECT_EQ(rig.pool->n_free(), 1u);
  EXPECT_GE(rig.wakes.load(), 1);
  auto second = std::async(std::launch::async, [&] { return rig.desk.ask(5); });
  const auto rest = served(rig, second);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->size(), 1u) << "no more than the pool holds";
  EXPECT_EQ(rig.pool->n_free(), 0u);
  rig.desk.hand_back(*three);
  rig.desk.hand_back(*rest);
  EXPECT_TRUE(rig.desk.has_work());
  rig.desk.serve(*rig.cache);
  EXPECT_FALSE(rig.desk.has_work());
  EXPECT_EQ(rig.pool->n_free(), 4u);
}

TEST(LandingDesk, AClosedDeskRefusesWaitingAndLaterAsks) {
  Rig rig;
  auto waiting = std::async(std::launch::async, [&] { return rig.desk.ask(2); });
  while (!rig.desk.has_work()) std::this_thread::yield();
  rig.desk.close();
  EXPECT_FALSE(waiting.get());
  EXPECT_FALSE(rig.desk.ask(1));
  EXPECT_EQ(rig.pool->n_free(), 4u) << "nothing was reserved";
}

}  // namespace
}  // namespace clm
