// Randomized workload of exact and shifted sequences over a small pool:
// prompts are edited, cut and spliced copies of a few documents, so spans
// are found at other positions all the time. After every operation the
// pool's references must equal what the live sequences hold, every slot
// below a sequence's exactness frontier must hold exactly its own prefix's
// K/V, every copied slot the K/V of its own token, and a prefix-mode start
// must never attach anything else. At the end everything is given back.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::kBlockSize;
using testing_support::shift_options;
using testing_support::shifting;

class ShiftWorkload {
 public:
  explicit ShiftWorkload(uint32_t seed) : rng_(seed), h_(48, CacheOptions{}, shifting()) {
    for (int d = 0; d < 3; ++d) {
      std::vector<int32_t> doc;
      for (int i = 0; i < 60; ++i) doc.push_back(pick(10, 400));
      docs_.push_back(doc);
    }
  }

  // Returns how many starts found no room.
  int run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFailure(); ++i) {
      const int op = pick(0, 9);
      if (op < 5) {
        op_begin();
      } else if (op < 8) {
        op_release();
      } else if (op == 8) {
        op_extend();
      } else {
        h_.cache().sweep_expired();
        h_.now += 1.0;
      }
      check();
    }
    while (!live_.empty()) op_release();
    check();
    // The workload did what it is for.
    EXPECT_GT(h_.cache().stats().shifted_tokens, 500u);
    EXPECT_GT(h_.cache().stats().reused_tokens, 100u);
    h_.cache().clear_cached();
    EXPECT_EQ(h_.pool().n_free(), h_.pool().n_blocks());
    return no_room_;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::vector<int32_t> random_prompt() {
    const auto& doc = docs_[static_cast<std::size_t>(pick(0, 2))];
    std::vector<int32_t> p;
    const bool from_start = pick(0, 2) == 0;  // a third start like their document: prefix hits
    for (int i = from_start ? 0 : pick(0, 6); i > 0; --i) p.push_back(pick(401, 420));  // a new head
    const int from = from_start ? 0 : pick(0, 30);
    const int to = pick(from + 8, 60);
    p.insert(p.end(), doc.begin() + from, doc.begin() + to);
    if (pick(0, 2) == 0) {  // an insertion in the middle
      const auto at = p.begin() + static_cast<std::ptrdiff_t>(p.size() / 2);
      p.insert(at, {421, 422, 423});
    }
    p.push_back(pick(10, 400));
    return p;
  }

  void op_begin() {
    if (live_.size() >= 4) return op_release();
    const auto prompt = random_prompt();
    ReuseOptions reuse = shift_options(pick(4, 8), pick(0, 2));
    const int mode = pick(0, 3);
    if (mode == 0) reuse.mode = ReuseMode::Prefix;
    if (mode == 1) reuse.mode = ReuseMode::Off;
    const CacheStats before = h_.cache().stats();
    live_.emplace_back(kBlockSize);
    CachedSequence& seq = live_.back();
    const auto plan = h_.run_plan(seq, prompt, reuse);
    if (!plan) {  // no room: nothing changed
      live_.pop_back();
      ++no_room_;
      EXPECT_EQ(h_.cache().stats().blocks_free, before.blocks_free);
      EXPECT_EQ(h_.cache().stats().sequences, before.sequences);
      return;
    }
    if (reuse.mode != ReuseMode::Shift) {
      EXPECT_TRUE(plan->spans.empty());
    }
    EXPECT_EQ(plan->counts(static_cast<int>(prompt.size())).total(), static_cast<int>(prompt.size()));
    EXPECT_EQ(seq.next_pos, static_cast<int32_t>(prompt.size()));
    if (plan->spans.empty()) {
      EXPECT_TRUE(h_.slots_intact(seq)) << "an exact start holds only exact K/V";
    }
  }

  void op_extend() {
    if (live_.empty()) return;
    CachedSequence& seq = live_[static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1))];
    if (!h_.cache().reserve(seq, 3)) return;
    for (int i = 0; i < 3; ++i) {
      const int32_t slot = h_.cache().append(seq, pick(10, 400));
      const auto stamp = CacheHarness::expected_stamp(seq.table.tokens(), static_cast<std::size_t>(slot), 0);
      std::memcpy(h_.slot_address(seq, slot), &stamp, sizeof stamp);
    }
    h_.cache().commit(seq);
  }

  void op_release() {
    if (live_.empty()) return;
    const auto i = static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1));
    h_.cache().release(live_[i]);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void check() {
    std::map<BlockId, int> refs;
    for (const CachedSequence& seq : live_) {
      for (BlockId id : seq.table.blocks()) ++refs[id];
      const auto& tokens = seq.table.tokens();
      for (int s = 0; s < seq.table.n_slots(); ++s) {
        const auto got = h_.read_slot(seq, s);
        if (s < seq.exact_slots()) {
          const auto want = CacheHarness::expected_stamp(tokens, static_cast<std::size_t>(s), 0);
          ASSERT_EQ(got, want) << "slot " << s << " below the frontier " << seq.exact_slots();
        } else {
          ASSERT_EQ(got.token, static_cast<uint32_t>(tokens[static_cast<std::size_t>(s)])) << "slot " << s;
        }
      }
    }
    std::size_t used = 0;
    for (BlockId id = 0; static_cast<std::size_t>(id) < h_.pool().n_blocks(); ++id) {
      const auto it = refs.find(id);
      const int want = it == refs.end() ? 0 : it->second;
      ASSERT_EQ(h_.pool().refcount(id), want) << "block " << id;
      used += want > 0 ? 1 : 0;
    }
    const CacheStats st = h_.cache().stats();
    EXPECT_EQ(st.blocks_used, used);
    EXPECT_EQ(st.blocks_used + st.blocks_cached + st.blocks_free, st.blocks_total);
  }

  std::mt19937 rng_;
  CacheHarness h_;
  std::vector<std::vector<int32_t>> docs_;
  std::vector<CachedSequence> live_;
  int no_room_ = 0;
};

TEST(ReuseRandom, ExactAndShiftedSequencesKeepEveryPromise) {
  int no_room = 0;
  for (uint32_t seed = 1; seed <= 12 && !::testing::Test::HasFailure(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    no_room += ShiftWorkload(seed).run(400);
  }
  EXPECT_GT(no_room, 0) << "the pool was never full";
}

}  // namespace
}  // namespace clm
