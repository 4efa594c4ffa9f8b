// Session pins driven through the Scheduler: posted calls take effect at the
// next step, a request that cannot get room otherwise takes it from the pins
// (nothing waits forever behind a pinned conversation), an idle started
// scheduler unpins on time, and stopping releases every pin.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "scheduler_rig.h"

namespace clm {
namespace {

using test::greedy_request;
using test::prompt_of;
using test::Rig;
using test::RigOptions;

Model& tiny() { return test::synthetic_model(WeightType::F32); }

RigOptions sixteen_blocks() {
  RigOptions o;
  o.n_blocks = 16;
  o.block_size = 16;
  o.scheduler.session_pins.max_share = 0.5;
  return o;
}

TEST(SessionPinsScheduler, ARequestNeedingThePinnedRoomTakesIt) {
  Rig rig(tiny(), sixteen_blocks());
  const int vocab = tiny().config().n_vocab;
  const auto turn = prompt_of(64, 1, vocab);
  test::run_one(rig, greedy_request(turn, 1));
  rig.scheduler->pin_session("a", turn, 0, 60);
  rig.scheduler->run_until_idle();
  SessionPinStats pins = rig.scheduler->stats().session_pins;
  EXPECT_EQ(pins.sessions, 1u);
  EXPECT_EQ(pins.blocks, 4u);
  EXPECT_EQ(rig.cache->available_blocks(), 12u);
  // 15 blocks: more than the pins leave, with nothing running to free any.
  const RequestSummary big = test::run_one(rig, greedy_request(prompt_of(15 * 16 - 1, 2, vocab), 1));
  EXPECT_EQ(big.stop_reason, "length");
  EXPECT_EQ(big.generated_tokens, 1);
  pins = rig.scheduler->stats().session_pins;
  EXPECT_EQ(pins.sessions, 0u);
  EXPECT_EQ(pins.released_for_room, 1u);
  test::expect_nothing_held(rig);
}

TEST(SessionPinsScheduler, UnpinAndStopReleaseThePins) {
  Rig rig(tiny(), sixteen_blocks());
  const int vocab = tiny().config().n_vocab;
  const auto a = prompt_of(48, 3, vocab), b = prompt_of(48, 4, vocab);
  test::run_one(rig, greedy_request(a, 1));
  test::run_one(rig, greedy_request(b, 1));
  rig.scheduler->pin_session("a", a, 0, 60);
  rig.scheduler->pin_session("b", b, 0, 60);
  rig.scheduler->run_until_idle();
  EXPECT_EQ(rig.scheduler->stats().session_pins.blocks, 6u);
  rig.scheduler->unpin_session("a");
  rig.scheduler->run_until_idle();
  EXPECT_EQ(rig.scheduler->stats().session_pins.sessions, 1u);
  EXPECT_EQ(rig.cache->available_blocks(), 13u);
  rig.scheduler->stop();
  EXPECT_EQ(rig.cache->available_blocks(), 16u);
}

TEST(SessionPinsScheduler, AnIdleStartedSchedulerUnpinsOnTime) {
  Rig rig(tiny(), sixteen_blocks());
  const auto turn = prompt_of(48, 5, tiny().config().n_vocab);
  test::run_one(rig, greedy_request(turn, 1));
  rig.scheduler->start();
  const auto pinned_at = std::chrono::steady_clock::now();
  rig.scheduler->pin_session("a", turn, 0, 0.3);
  auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - pinned_at).count(); };
  while (rig.scheduler->stats().session_pins.sessions == 0 && waited() < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  while (rig.scheduler->stats().session_pins.expired == 0 && waited() < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const SessionPinStats pins = rig.scheduler->stats().session_pins;
  EXPECT_EQ(pins.expired, 1u);
  EXPECT_EQ(pins.sessions, 0u);
  EXPECT_GE(waited(), 0.3);
  EXPECT_LT(waited(), 5.0);
  rig.scheduler->stop();
}

TEST(SessionPinsScheduler, AShareOutsideZeroToOneIsRefused) {
  for (double share : {-0.1, 1.5}) {
    EngineOptions o;
    o.load.model_path = test::shared_file("models/stories260K.gguf");
    o.scheduler.session_pins.max_share = share;
    auto engine = Engine::create(o);
    ASSERT_FALSE(engine);
    EXPECT_NE(engine.error().message.find("session pin share must be in [0, 1]"), std::string::npos)
        << engine.error().message;
  }
}

}  // namespace
}  // namespace clm
