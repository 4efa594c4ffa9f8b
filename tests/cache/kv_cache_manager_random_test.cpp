// Thousands of random operations on a small pool (begin with prompts drawn
// from a few shared prefixes, reserve and append, commit, fork, release,
// TTL sweeps, clears), each followed by a check of the manager against a
// reference model kept here: refcounts equal the live tables listing each
// block, block states add up, every slot holds its own sequence's K/V, a
// reserve fails exactly when the reference says memory is short (and then
// changes nothing), and a sweep drops exactly the idle blocks past the TTL.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/block_key.h"
#include "cache/kv_cache_manager.h"
#include "cache_test_support.h"

namespace clm {
namespace {

using testing_support::CacheHarness;
using testing_support::kBlockSize;

constexpr std::size_t kPoolBlocks = 24;
constexpr std::size_t kMaxLive = 6;
constexpr int kMaxTokens = 40;
constexpr double kTtl = 25.0;
constexpr int32_t kVocab = 6;  // small, so that random suffixes also collide

struct Live {
  CachedSequence seq{kBlockSize};
  std::vector<int32_t> tokens;  // what the sequence holds, kept apart from its table
};

CacheOptions with_ttl(CacheOptions options) {
  options.ttl_seconds = kTtl;
  return options;
}

class RandomWorkload {
 public:
  RandomWorkload(uint32_t seed, CacheOptions options, CacheDeps deps = {})
      : rng_(seed), h_(kPoolBlocks, with_ttl(options), std::move(deps)), idle_since_(kPoolBlocks, 0.0) {
    for (int p = 0; p < 4; ++p) prefixes_.push_back(random_tokens(14));
    last_ = h_.cache().stats();
  }

  void run(int n_ops) {
    for (int i = 0; i < n_ops && !::testing::Test::HasFailure(); ++i) {
      SCOPED_TRACE("operation " + std::to_string(i));
      h_.now += static_cast<double>(pick(0, 2));
      const int op = pick(0, 199);
      if (op < 50)
        op_begin();
      else if (op < 110)
        op_extend();
      else if (op < 130)
        op_fork();
      else if (op < 162)
        op_release();
      else if (op < 182)
        op_sweep();
      else if (op < 196)
        op_probe();
      else if (op < 198)
        op_take_everything();
      else
        op_clear();
      check();
    }
    finish();
  }

  const CacheStats& stats() const { return last_; }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back(pick(0, kVocab - 1));
    return v;
  }

  std::vector<int32_t> random_prompt() {
    const auto& prefix = prefixes_[static_cast<std::size_t>(pick(0, 3))];
    std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + pick(0, static_cast<int>(prefix.size())));
    const auto suffix = random_tokens(pick(0, 8));
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    return prompt;
  }

  std::size_t count_idle() {
    std::size_t n = 0;
    for (std::size_t i = 0; i < kPoolBlocks; ++i) {
      const auto id = static_cast<BlockId>(i);
      if (!h_.pool().is_free(id) && h_.pool().refcount(id) == 0) ++n;
    }
    return n;
  }

  // Reserves room for `tokens` (and sometimes more, ahead), appends and
  // maybe commits them. Returns false if the reserve failed, which the
  // reference must have predicted and which must change nothing.
  bool extend(Live& live, std::span<const int32_t> tokens) {
    CachedSequence& seq = live.seq;
    const int ahead = pick(0, 3) == 0 ? pick(1, 5) : 0;
    const int n = static_cast<int>(tokens.size()) + ahead;
    const int slots = seq.table.n_slots();
    const bool copy = n > 0 && slots % kBlockSize != 0 &&
                      h_.pool().refcount(seq.table.blocks()[static_cast<std::size_t>(slots / kBlockSize)]) > 1;
    const int missing = slots + n - seq.table.capacity();
    const std::size_t need =
        (missing > 0 ? static_cast<std::size_t>((missing + kBlockSize - 1) / kBlockSize) : 0) + (copy ? 1 : 0);
    const std::size_t n_free = h_.pool().n_free();
    const std::size_t available = n_free + count_idle();
    EXPECT_EQ(h_.cache().available_blocks(), available);
    const CacheStats before = h_.cache().stats();
    const std::vector<BlockId> blocks_before = seq.table.blocks();

    const Status r = h_.cache().reserve(seq, n);
    const CacheStats after = h_.cache().stats();
    if (need > available) {
      EXPECT_FALSE(r) << "need " << need << " of " << available;
      EXPECT_EQ(seq.table.blocks(), blocks_before);
      EXPECT_EQ(seq.table.n_slots(), slots);
      EXPECT_EQ(after.blocks_free, before.blocks_free);
      EXPECT_EQ(after.blocks_cached, before.blocks_cached);
      EXPECT_EQ(after.evictions_capacity, before.evictions_capacity);
      EXPECT_EQ(after.copy_on_write, before.copy_on_write);
      return false;
    }
    EXPECT_TRUE(r) << "need " << need << " of " << available;
    if (!r) return false;
    EXPECT_EQ(after.copy_on_write - before.copy_on_write, copy ? 1u : 0u);
    EXPECT_EQ(after.evictions_capacity - before.evictions_capacity, need > n_free ? need - n_free : 0);
    EXPECT_GE(seq.table.capacity() - seq.table.n_slots(), n);
    // Every block the next n slots land in is this sequence's alone.
    for (int s = slots; s < slots + n; ++s)
      EXPECT_EQ(h_.pool().refcount(seq.table.blocks()[static_cast<std::size_t>(s / kBlockSize)]), 1);
    h_.append(seq, tokens);
    live.tokens.insert(live.tokens.end(), tokens.begin(), tokens.end());
    if (pick(0, 4) != 0) h_.cache().commit(seq);
    return true;
  }

  void release_live(std::size_t index) {
    const std::vector<BlockId> blocks = live_[index].seq.table.blocks();
    h_.cache().release(live_[index].seq);
    EXPECT_TRUE(live_[index].seq.table.blocks().empty());
    EXPECT_EQ(live_[index].seq.table.n_slots(), 0);
    for (BlockId id : blocks)
      if (!h_.pool().is_free(id) && h_.pool().refcount(id) == 0) idle_since_[static_cast<std::size_t>(id)] = h_.now;
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
  }

  void op_begin() {
    if (live_.size() >= kMaxLive) return op_release();
    const auto prompt = random_prompt();
    const uint64_t ns = pick(0, 9) == 0 ? 1 : 0;
    const int planned = h_.cache().match_prefix(prompt, ns);
    live_.emplace_back();
    Live& live = live_.back();
    const int attached = h_.cache().begin(live.seq, prompt, ns);
    EXPECT_EQ(attached, planned);
    EXPECT_EQ(attached % kBlockSize, 0);
    if (attached > 0) {
      EXPECT_LT(static_cast<std::size_t>(attached), prompt.size());
    }
    EXPECT_EQ(live.seq.table.n_slots(), attached);
    EXPECT_EQ(live.seq.keys.size(), static_cast<std::size_t>(attached / kBlockSize));
    live.tokens.assign(prompt.begin(), prompt.begin() + attached);
    // The attached K/V is this prompt's own, whole prefix included.
    EXPECT_TRUE(h_.slots_intact(live.seq));
    if (!extend(live, std::span(prompt).subspan(static_cast<std::size_t>(attached)))) release_live(live_.size() - 1);
  }

  void op_extend() {
    if (live_.empty()) return op_begin();
    const auto index = static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1));
    if (live_[index].seq.table.n_slots() >= kMaxTokens) return release_live(index);
    const auto tokens = random_tokens(pick(1, 6));
    extend(live_[index], tokens);
  }

  void op_fork() {
    if (live_.empty() || live_.size() >= kMaxLive) return op_release();
    const auto index = static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1));
    Live copy;
    h_.cache().fork(live_[index].seq, copy.seq);
    copy.tokens = live_[index].tokens;
    const CachedSequence& src = live_[index].seq;
    const std::size_t held = static_cast<std::size_t>((src.table.n_slots() + kBlockSize - 1) / kBlockSize);
    EXPECT_EQ(copy.seq.table.blocks(),
              std::vector<BlockId>(src.table.blocks().begin(), src.table.blocks().begin() + static_cast<std::ptrdiff_t>(held)));
    EXPECT_EQ(copy.seq.keys, src.keys);
    live_.push_back(std::move(copy));
  }

  void op_release() {
    if (live_.empty()) return;
    release_live(static_cast<std::size_t>(pick(0, static_cast<int>(live_.size()) - 1)));
  }

  void op_sweep() {
    const double cutoff = h_.now - kTtl;
    std::vector<BlockId> expired;
    for (std::size_t i = 0; i < kPoolBlocks; ++i) {
      const auto id = static_cast<BlockId>(i);
      if (!h_.pool().is_free(id) && h_.pool().refcount(id) == 0 && idle_since_[i] < cutoff) expired.push_back(id);
    }
    const uint64_t ttl_before = h_.cache().stats().evictions_ttl;
    EXPECT_EQ(h_.cache().sweep_expired(), expired.size());
    EXPECT_EQ(h_.cache().stats().evictions_ttl - ttl_before, expired.size());
    for (BlockId id : expired) EXPECT_TRUE(h_.pool().is_free(id)) << "expired block " << id << " kept";
  }

  void op_probe() {
    const auto prompt = random_prompt();
    const int m = h_.cache().match_prefix(prompt, static_cast<uint64_t>(pick(0, 1)));
    EXPECT_EQ(m % kBlockSize, 0);
    if (m > 0) {
      EXPECT_LT(static_cast<std::size_t>(m), prompt.size());
    }
  }

  // available_blocks() is exact: a sequence can take all of it, not one more.
  void op_take_everything() {
    if (live_.size() >= kMaxLive) return op_release();
    const std::size_t available = h_.pool().n_free() + count_idle();
    live_.emplace_back();
    Live& live = live_.back();
    EXPECT_EQ(h_.cache().begin(live.seq, {}, 0), 0);
    EXPECT_FALSE(h_.cache().reserve(live.seq, static_cast<int>(available) * kBlockSize + 1));
    EXPECT_TRUE(h_.cache().reserve(live.seq, static_cast<int>(available) * kBlockSize));
    EXPECT_EQ(h_.pool().n_free(), 0u);
    EXPECT_EQ(count_idle(), 0u);
    EXPECT_EQ(h_.cache().available_blocks(), 0u);
    release_live(live_.size() - 1);
  }

  void op_clear() {
    h_.cache().clear_cached();
    EXPECT_EQ(count_idle(), 0u);
  }

  void check() {
    std::vector<int> refs(kPoolBlocks, 0);
    std::map<BlockId, std::size_t> index_of;  // where a block sits in the tables listing it
    for (const Live& live : live_) {
      const BlockTable& t = live.seq.table;
      EXPECT_EQ(t.tokens(), live.tokens);
      ASSERT_EQ(t.positions().size(), live.tokens.size());
      for (std::size_t s = 0; s < t.positions().size(); ++s) EXPECT_EQ(t.positions()[s], static_cast<int32_t>(s));
      EXPECT_GE(t.capacity(), t.n_slots());
      EXPECT_LE(live.seq.keys.size(), static_cast<std::size_t>(t.n_slots() / kBlockSize));
      EXPECT_TRUE(h_.slots_intact(live.seq));
      std::set<BlockId> mine;
      for (std::size_t b = 0; b < t.blocks().size(); ++b) {
        const BlockId id = t.blocks()[b];
        ASSERT_GE(id, 0);
        ASSERT_LT(static_cast<std::size_t>(id), kPoolBlocks);
        EXPECT_TRUE(mine.insert(id).second) << "block " << id << " listed twice by one table";
        ++refs[static_cast<std::size_t>(id)];
        const auto [it, fresh] = index_of.emplace(id, b);
        if (!fresh) {
          EXPECT_EQ(it->second, b) << "block " << id << " shared at different places";
        }
      }
    }
    std::size_t n_free = 0, n_used = 0, n_idle = 0;
    for (std::size_t i = 0; i < kPoolBlocks; ++i) {
      const auto id = static_cast<BlockId>(i);
      EXPECT_EQ(h_.pool().refcount(id), refs[i]) << "block " << id;
      if (h_.pool().is_free(id)) {
        EXPECT_EQ(refs[i], 0) << "block " << id << " free while listed";
        ++n_free;
      } else if (refs[i] > 0) {
        ++n_used;
      } else {
        ++n_idle;
      }
    }
    EXPECT_EQ(n_free + n_used + n_idle, kPoolBlocks);
    const CacheStats s = h_.cache().stats();
    EXPECT_EQ(s.blocks_total, kPoolBlocks);
    EXPECT_EQ(s.blocks_free, n_free);
    EXPECT_EQ(s.blocks_used, n_used);
    EXPECT_EQ(s.blocks_cached, n_idle);
    EXPECT_EQ(h_.pool().n_free(), n_free);
    EXPECT_EQ(h_.cache().available_blocks(), n_free + n_idle);
    // Counters only grow, and parts never exceed their wholes.
    EXPECT_GE(s.sequences, last_.sequences);
    EXPECT_GE(s.prompt_tokens, last_.prompt_tokens);
    EXPECT_GE(s.blocks_looked_up, last_.blocks_looked_up);
    EXPECT_GE(s.blocks_ever_cached, last_.blocks_ever_cached);
    EXPECT_GE(s.evictions_capacity, last_.evictions_capacity);
    EXPECT_GE(s.evictions_ttl, last_.evictions_ttl);
    EXPECT_GE(s.copy_on_write, last_.copy_on_write);
    EXPECT_LE(s.reused_tokens, s.prompt_tokens);
    EXPECT_LE(s.blocks_hit, s.blocks_looked_up);
    EXPECT_LE(s.cached_blocks_hit, s.blocks_ever_cached);
    last_ = s;
  }

  void finish() {
    while (!live_.empty()) release_live(live_.size() - 1);
    check();
    EXPECT_EQ(h_.cache().stats().blocks_used, 0u);
    // Every idle block is still reachable for eviction: none leaked.
    op_take_everything();
    EXPECT_EQ(h_.pool().n_free(), kPoolBlocks);
    h_.cache().clear_cached();
    EXPECT_EQ(h_.pool().n_free(), kPoolBlocks);
    last_ = h_.cache().stats();
  }

  std::mt19937 rng_;
  CacheHarness h_;
  std::vector<double> idle_since_;  // when each idle block was last released
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<Live> live_;
  CacheStats last_;
};

TEST(KvCacheManagerRandom, MatchesReferenceModel) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomWorkload w(seed, testing_support::whole_blocks_only());
    w.run(4000);
    // The workload must have exercised what it checks.
    EXPECT_GT(w.stats().blocks_hit, 100u);
    EXPECT_GT(w.stats().copy_on_write, 10u);
    EXPECT_GT(w.stats().evictions_capacity, 10u);
    EXPECT_GT(w.stats().evictions_ttl, 10u);
  }
}

TEST(KvCacheManagerRandom, MatchesReferenceModelUnderHashCollisions) {
  // Four possible keys: nearly every block collides with another.
  CacheDeps deps;
  deps.key_function = [](BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) {
    return block_key(parent, tokens, context) % 4;
  };
  for (uint32_t seed : {4u, 5u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomWorkload w(seed, testing_support::whole_blocks_only(), deps);
    w.run(4000);
    EXPECT_GT(w.stats().blocks_hit, 10u);
  }
}

TEST(KvCacheManagerRandom, MatchesReferenceModelWithHotBlocksAndNoCaching) {
  CacheOptions hot = testing_support::whole_blocks_only();
  hot.hot_after_hits = 1;
  RandomWorkload a(6, hot);
  a.run(3000);
  CacheOptions off = testing_support::whole_blocks_only();
  off.prefix_caching = false;
  RandomWorkload b(7, off);
  b.run(2000);
  EXPECT_EQ(b.stats().blocks_hit, 0u);
  EXPECT_EQ(b.stats().blocks_ever_cached, 0u);
}

}  // namespace
}  // namespace clm

