// Live sequences that forget blocks (KvCacheManager::evict_block, the
// self-managed context of a KV budget) leave holes in their tables. These
// tests check the accounting with holes against a reference model of live
// blocks (random grow / evict / fork / cancel; the pool's counts exact
// after every step, nothing leaked at the end) and that nothing computed
// after a hole is ever offered as an exact prefix.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::kBlockSize;
using testing_support::SlotStamp;

constexpr std::size_t kPoolBlocks = 24;
constexpr std::size_t kMaxLive = 5;
constexpr int32_t kVocab = 5;

// What a forward pass writes into a slot: it depends on the token, its
// position and every token the sequence still sees at that moment (so a
// slot computed after a hole differs from the same token computed in a
// whole context).
SlotStamp stamp_for(const CachedSequence& seq, int32_t slot) {
  const auto& tokens = seq.table.tokens();
  SlotStamp s = CacheHarness::expected_stamp(tokens, static_cast<std::size_t>(slot), seq.context.cache_namespace);
  s.pos = static_cast<uint32_t>(seq.table.positions()[static_cast<std::size_t>(slot)]);
  return s;
}

struct Live {
  CachedSequence seq{kBlockSize};
  std::vector<SlotStamp> stamps;  // what each slot must hold, recorded when it was written
};

class EvictWorkload {
 public:
  EvictWorkload(uint32_t seed, CacheOptions options)
      : rng_(seed), caching_(options.prefix_caching), h_(kPoolBlocks, std::move(options)) {
    for (int p = 0; p < 3; ++p) prefixes_.push_back(random_tokens(16));
  }

  void run(int n_ops) {
    for (int i = 0; i < n_ops && !::testing::Test::HasFailure(); ++i) {
      SCOPED_TRACE("operation " + std::to_string(i));
      const int op = pick(0, 99);
      if (op < 20)
        op_begin();
      else if (op < 55)
        op_grow();
      else if (op < 75)
        op_evict();
      else if (op < 83)
        op_fork();
      else if (op < 95)
        op_cancel();
      else if (op < 98)
        op_take_everything();
      else
        h_.cache().clear_cached();
      check();
    }
    while (!live_.empty()) cancel(live_.size() - 1);
    check();
    // Nothing leaked: every block is free or evictable, and a sequence can
    // take them all.
    op_take_everything();
    h_.cache().clear_cached();
    EXPECT_EQ(h_.pool().n_free(), kPoolBlocks);
  }

  uint64_t forgotten() { return h_.cache().stats().blocks_forgotten; }
  int exact_hits_checked() const { return exact_hits_checked_; }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back(pick(0, kVocab - 1));
    return v;
  }

  void write(Live& live, std::span<const int32_t> tokens) {
    for (int32_t token : tokens) {
      const int32_t slot = h_.cache().append(live.seq, token);
      const SlotStamp s = stamp_for(live.seq, slot);
      std::memcpy(h_.slot_address(live.seq, slot), &s, sizeof s);
      live.stamps.push_back(s);
    }
  }

  bool grow(Live& live, std::span<const int32_t> tokens) {
    const std::size_t available = h_.cache().available_blocks();
    const int slots = live.seq.table.n_slots();
    const int n = static_cast<int>(tokens.size());
    const bool copy = n > 0 && slots % kBlockSize != 0 &&
                      h_.pool().refcount(live.seq.table.blocks()[static_cast<std::size_t>(slots / kBlockSize)]) > 1;
    const int missing = slots + n - live.seq.table.capacity();
    const std::size_t need = (missing > 0 ? static_cast<std::size_t>((missing + kBlockSize - 1) / kBlockSize) : 0) + (copy ? 1 : 0);
    const Status r = h_.cache().reserve(live.seq, n);
    EXPECT_EQ(static_cast<bool>(r), need <= available) << "need " << need << " of " << available;
    if (!r) return false;
    write(live, tokens);
    if (pick(0, 3) != 0) h_.cache().commit(live.seq);
    return true;
  }

  void op_begin() {
    if (live_.size() >= kMaxLive) return op_cancel();
    const auto& prefix = prefixes_[static_cast<std::size_t>(pick(0, 2))];
    std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + pick(0, static_cast<int>(prefix.size())));
    const auto tail = random_tokens(pick(1, 5));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    live_.emplace_back();
    Live& live = live_.back();
    const int attached = h_.cache().begin(live.seq, prompt, 0);
    // An attached prefix is exactly what a whole, cold context computes:
    // nothing written after a hole may be offered here.
    for (int s = 0; s < attached; ++s) {
      const SlotStamp want = CacheHarness::expected_stamp(prompt, static_cast<std::size_t>(s), 0);
      EXPECT_EQ(h_.read_slot(live.seq, s), want) << "attached slot " << s << " is not an exact prefix";
      live.stamps.push_back(want);
      ++exact_hits_checked_;
    }
    if (!grow(live, std::span(prompt).subspan(static_cast<std::size_t>(attached)))) cancel(live_.size() - 1);
  }

  void op_grow() {
    if (live_.empty()) return op_begin();
    Live& live = live_[static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1))];
    if (live.seq.table.n_slots() >= 6 * kBlockSize) return op_evict();
    grow(live, random_tokens(pick(1, 6)));
  }

  void op_evict() {
    if (live_.empty()) return;
    Live& live = live_[static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1))];
    const int written_blocks = live.seq.written / kBlockSize;
    if (written_blocks == 0) return;
    const auto b = static_cast<std::size_t>(pick(0, written_blocks - 1));
    const BlockId id = live.seq.table.blocks()[b];
    const int refs_before = h_.pool().refcount(id);
    const std::vector<int32_t> positions_before = live.seq.table.positions();
    h_.cache().evict_block(live.seq, b);
    live.stamps.erase(live.stamps.begin() + static_cast<std::ptrdiff_t>(b * kBlockSize),
                      live.stamps.begin() + static_cast<std::ptrdiff_t>((b + 1) * kBlockSize));
    // Only this sequence's reference goes; later slots keep their positions.
    if (refs_before > 1) {
      EXPECT_EQ(h_.pool().refcount(id), refs_before - 1);
    }
    std::vector<int32_t> kept = positions_before;
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(b * kBlockSize),
               kept.begin() + static_cast<std::ptrdiff_t>((b + 1) * kBlockSize));
    EXPECT_EQ(live.seq.table.positions(), kept);
    if (!caching_ && refs_before == 1) {
      EXPECT_TRUE(h_.pool().is_free(id)) << "a forgotten block nobody holds is not free";
    }
  }

  void op_fork() {
    if (live_.empty() || live_.size() >= kMaxLive) return op_cancel();
    const std::size_t i = static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1));
    Live copy;
    h_.cache().fork(live_[i].seq, copy.seq);
    copy.stamps = live_[i].stamps;
    live_.push_back(std::move(copy));
  }

  void cancel(std::size_t i) {
    h_.cache().release(live_[i].seq);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  void op_cancel() {
    if (!live_.empty()) cancel(static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1)));
  }

  // available_blocks() is exact with holes: all of it can be taken, not one more.
  void op_take_everything() {
    if (live_.size() >= kMaxLive) return op_cancel();
    const std::size_t available = h_.cache().available_blocks();
    live_.emplace_back();
    Live& live = live_.back();
    EXPECT_EQ(h_.cache().begin(live.seq, {}, 0), 0);
    EXPECT_FALSE(h_.cache().reserve(live.seq, static_cast<int>(available) * kBlockSize + 1));
    EXPECT_TRUE(h_.cache().reserve(live.seq, static_cast<int>(available) * kBlockSize));
    EXPECT_EQ(h_.pool().n_free(), 0u);
    EXPECT_EQ(h_.cache().available_blocks(), 0u);
    cancel(live_.size() - 1);
  }

  // The reference: each block's references are the live tables listing it;
  // a block nobody lists is free, or (with caching) idle and evictable.
  void check() {
    std::vector<int> refs(kPoolBlocks, 0);
    for (const Live& live : live_) {
      const BlockTable& t = live.seq.table;
      ASSERT_EQ(live.stamps.size(), static_cast<std::size_t>(t.n_slots()));
      std::set<BlockId> mine;
      for (BlockId id : t.blocks()) {
        EXPECT_TRUE(mine.insert(id).second) << "block " << id << " listed twice by one table";
        ++refs[static_cast<std::size_t>(id)];
      }
      for (int s = 0; s < t.n_slots(); ++s) {
        EXPECT_EQ(h_.read_slot(live.seq, s), live.stamps[static_cast<std::size_t>(s)]) << "slot " << s << " overwritten";
        if (s > 0) {
          EXPECT_LT(t.positions()[static_cast<std::size_t>(s - 1)], t.positions()[static_cast<std::size_t>(s)]);
        }
      }
    }
    std::size_t n_free = 0, n_used = 0, n_idle = 0;
    for (std::size_t i = 0; i < kPoolBlocks; ++i) {
      const auto id = static_cast<BlockId>(i);
      EXPECT_EQ(h_.pool().refcount(id), refs[i]) << "block " << id;
      if (h_.pool().is_free(id))
        ++n_free;
      else if (refs[i] > 0)
        ++n_used;
      else
        ++n_idle;
    }
    if (!caching_) {
      EXPECT_EQ(n_idle, 0u);
    }
    const CacheStats s = h_.cache().stats();
    EXPECT_EQ(s.blocks_free, n_free);
    EXPECT_EQ(s.blocks_used, n_used);
    EXPECT_EQ(s.blocks_cached, n_idle);
    EXPECT_EQ(h_.pool().n_free(), kPoolBlocks - n_used - n_idle);
    EXPECT_EQ(h_.cache().available_blocks(), n_free + n_idle);
  }

  std::mt19937 rng_;
  bool caching_;
  CacheHarness h_;
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<Live> live_;
  int exact_hits_checked_ = 0;
};

TEST(KvCacheEvict, RandomGrowEvictForkCancelKeepsExactAccounting) {
  for (uint32_t seed : {11u, 12u, 13u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    EvictWorkload w(seed, testing_support::whole_blocks_only());
    w.run(3000);
    EXPECT_GT(w.forgotten(), 200u);
    EXPECT_GT(w.exact_hits_checked(), 200);
  }
}

TEST(KvCacheEvict, RandomWithPartialBlocksAndWithoutCaching) {
  EvictWorkload partial(14, CacheOptions{});
  partial.run(3000);
  EXPECT_GT(partial.forgotten(), 200u);
  CacheOptions off = testing_support::whole_blocks_only();
  off.prefix_caching = false;
  EvictWorkload uncached(15, off);
  uncached.run(3000);
  EXPECT_GT(uncached.forgotten(), 200u);
}

TEST(KvCacheEvict, BlocksAfterAHoleAreNeverExactPrefixes) {
  CacheHarness h(32);
  CachedSequence a(kBlockSize);
  const auto prompt = testing_support::iota_tokens(1, 4 * kBlockSize + 1);
  ASSERT_EQ(h.run(a, prompt), 0);
  h.cache().evict_block(a, 1);
  EXPECT_EQ(a.table.n_slots(), 3 * kBlockSize + 1);
  EXPECT_EQ(a.table.positions()[kBlockSize], 2 * kBlockSize);  // positions kept
  ASSERT_TRUE(h.cache().reserve(a, 2 * kBlockSize));
  std::vector<int32_t> more = testing_support::iota_tokens(100, 2 * kBlockSize);
  for (int32_t t : more) {
    const int32_t slot = h.cache().append(a, t);
    const SlotStamp s = stamp_for(a, slot);
    std::memcpy(h.slot_address(a, slot), &s, sizeof s);
  }
  h.cache().commit(a);
  EXPECT_EQ(a.keys.size(), 1u);  // only the block before the hole is an exact prefix of this table
  // The table's own tokens (hole closed) match only up to the hole.
  std::vector<int32_t> seen = a.table.tokens();
  seen.push_back(7);
  EXPECT_EQ(h.cache().match_prefix(seen, 0), kBlockSize);
  // The original prompt's blocks were exact when computed and stay so.
  EXPECT_EQ(h.cache().match_prefix(prompt, 0), 4 * kBlockSize);
  CachedSequence b(kBlockSize);
  EXPECT_EQ(h.cache().begin(b, prompt, 0), 4 * kBlockSize);
  EXPECT_TRUE(h.slots_intact(b));
  h.cache().release(b);
  h.cache().release(a);
  // Nothing leaked.
  EXPECT_EQ(h.cache().available_blocks(), 32u);
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), 32u);
}

TEST(KvCacheEvict, SharedPrefixBlockStaysForItsOtherHolder) {
  CacheHarness h(16);
  CachedSequence a(kBlockSize), b(kBlockSize);
  const auto prompt = testing_support::iota_tokens(1, 3 * kBlockSize + 1);
  ASSERT_EQ(h.run(a, prompt), 0);
  ASSERT_EQ(h.run(b, prompt), 3 * kBlockSize);
  const BlockId shared = a.table.blocks()[1];
  EXPECT_EQ(h.pool().refcount(shared), 2);
  h.cache().evict_block(a, 1);
  EXPECT_EQ(h.pool().refcount(shared), 1);
  EXPECT_TRUE(h.slots_intact(b));
  // b ends first: the forgotten block becomes idle while a still holds the
  // block after it, and must still be evictable (accounting exact).
  h.cache().release(b);
  const std::size_t available = h.cache().available_blocks();
  CachedSequence all(kBlockSize);
  EXPECT_EQ(h.cache().begin(all, {}, 0), 0);
  EXPECT_TRUE(h.cache().reserve(all, static_cast<int>(available) * kBlockSize));
  EXPECT_EQ(h.pool().n_free(), 0u);
  h.cache().release(all);
  h.cache().release(a);
  h.cache().clear_cached();
  EXPECT_EQ(h.pool().n_free(), 16u);
}

}  // namespace
}  // namespace clm
