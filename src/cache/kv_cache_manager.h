// KvCacheManager: exact prefix caching over the KvPool. It owns the policy
// the pool knows nothing of: which full blocks are registered in the prefix
// index, which idle blocks stay resident (two-level LRU, leaves before
// parents, optional time-to-live), copy-on-write of shared blocks, and the
// counters of CacheStats. Sequences are plain values the caller owns; every
// change to them goes through the manager. Not thread-safe: one owner (the
// scheduler) calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/block_key.h"
#include "cache/block_table.h"
#include "cache/cache_stats.h"
#include "cache/kv_pool.h"
#include "util/error.h"

namespace clm {

struct CacheOptions {
  bool prefix_caching = true;
  // Also reuse the leading tokens of a cached block that continues the
  // prompt only partly, by copying them (see match_prefix).
  bool partial_block_reuse = true;
  // An idle cached block hit this many times lives on the hot level, which
  // is evicted only when the normal level is empty.
  uint32_t hot_after_hits = 2;
  // Idle cached blocks unused for longer are dropped by sweep_expired(); 0 = never.
  double ttl_seconds = 0.0;
  // Seconds on a monotonic clock; replaceable in tests.
  std::function<double()> clock;
  // Block identity; replaceable in tests to force hash collisions.
  std::function<BlockKey(BlockKey, std::span<const int32_t>, const KeyContext&)> key_function;
};

// One live sequence's KV: its block table and the keys of its leading full
// blocks that are registered in (or were attached from) the prefix index.
struct CachedSequence {
  explicit CachedSequence(int block_size = 32) : table(block_size) {}
  BlockTable table;
  KeyContext context;
  std::vector<BlockKey> keys;  // keys[b] for the leading blocks already keyed
};

class KvCacheManager {
 public:
  KvCacheManager(KvPool& pool, uint64_t model_fingerprint, CacheOptions options = {});

  KvPool& pool() { return pool_; }
  const KvPool& pool() const { return pool_; }

  // Plan, no change: how many leading tokens of `prompt` could be attached
  // from resident blocks: whole shared blocks, then the leading tokens of a
  // cached block that continues the prompt only partly (copied, not shared).
  // Never the whole prompt: its last token is always computed, so its
  // logits exist.
  int match_prefix(std::span<const int32_t> prompt, uint64_t cache_namespace) const;
  // Starts `seq` (which must be empty) with that prefix attached: full
  // blocks copy-free (one more reference each), a partial match copied into
  // a block of its own if one can be had. Returns the tokens attached.
  int begin(CachedSequence& seq, std::span<const int32_t> prompt, uint64_t cache_namespace);
  // Blocks reserve() could obtain now: free plus evictable idle cached ones.
  std::size_t available_blocks() const;
  // Room for n more tokens. Evicts idle cached blocks if it must, and copies
  // a shared partial last block so that appending never writes into a block
  // another sequence reads. Fails, changing nothing, if memory is short.
  Status reserve(CachedSequence& seq, int n);
  // Appends one token (room reserved); returns its slot.
  int32_t append(CachedSequence& seq, int32_t token, int32_t pos);
  // Call after the forward pass wrote the appended tokens' K/V: registers
  // the sequence's newly completed full blocks in the prefix index.
  void commit(CachedSequence& seq);
  // Makes `to` (empty) share every block of `from` that holds tokens,
  // including a partial last block, which is copied on the first write into
  // it. Room `from` reserved beyond its tokens stays its own.
  void fork(const CachedSequence& from, CachedSequence& to);
  // Ends a sequence: registered blocks stay resident and reusable, others
  // are freed. The tail goes first so leaves are evicted before parents.
  // With partial-block reuse, a partly filled last block is kept too (its
  // leading tokens can be copied by a later prompt that continues them).
  void release(CachedSequence& seq);
  // Drops idle cached blocks idle for longer than the TTL; returns how many.
  std::size_t sweep_expired();
  // Drops every idle cached block.
  void clear_cached();

  CacheStats stats() const;

 private:
  enum class Level : uint8_t { Normal = 0, Hot = 1 };
  struct Meta {
    BlockKey key = kNoKey;  // registered in the index
    BlockKey parent = kNoKey;
    uint64_t cache_namespace = 0;
    BlockId parent_block = kNoBlock;
    int32_t n_tokens = 0;  // tokens held: block_size, or fewer for a kept tail
    uint32_t hits = 0;
    int32_t cached_children = 0;  // registered blocks naming this one as parent
    double last_access = 0.0;
    Level level = Level::Normal;
    bool in_list = false;
    BlockId prev = kNoBlock, next = kNoBlock;
  };

  BlockKey key_of(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) const;
  // The resident block holding exactly this block of tokens after `parent`.
  BlockId lookup(BlockKey key, BlockKey parent, std::span<const int32_t> tokens, uint64_t cache_namespace) const;
  // The registered child of `parent` sharing the longest run of leading
  // tokens with `rest` (at most a block), and that length.
  std::pair<BlockId, int> best_partial(BlockKey parent, uint64_t cache_namespace, std::span<const int32_t> rest) const;
  void attach_partial(CachedSequence& seq, std::span<const int32_t> prompt);
  // Registers a block under `parent_key` / `parent_block` holding `tokens`.
  void register_block(BlockId id, BlockKey key, BlockKey parent_key, BlockId parent_block,
                      std::span<const int32_t> tokens, uint64_t cache_namespace);
  // At release: keeps a partly filled last block for partial reuse.
  void keep_tail(CachedSequence& seq);
  BlockId allocate_block();  // free stack first, then eviction
  BlockId evict_one();
  void unregister(BlockId id);
  void on_idle(BlockId id);  // refcount reached zero
  // Intrusive LRU lists: index 0 normal, 1 hot; sentinels at n_blocks + level.
  void list_push_back(BlockId id, Level level);
  void list_insert_by_age(BlockId id, Level level);  // keeps last_access order
  void list_insert_before(BlockId id, BlockId at);
  void list_remove(BlockId id);
  BlockId list_front(Level level) const;
  double now() const;
  Meta& meta(BlockId id) { return meta_[static_cast<std::size_t>(id)]; }
  const Meta& meta(BlockId id) const { return meta_[static_cast<std::size_t>(id)]; }

  KvPool& pool_;
  uint64_t fingerprint_;
  CacheOptions options_;
  int block_size_;
  std::vector<Meta> meta_;            // n_blocks + 2 sentinels
  std::vector<int32_t> block_tokens_;  // [n_blocks][block_size] tokens of registered blocks
  std::unordered_map<BlockKey, BlockId> index_;
  std::unordered_multimap<BlockKey, BlockId> children_;  // parent key -> registered blocks under it
  std::size_t n_idle_cached_ = 0;     // idle registered blocks, on a list or not
  CacheStats counters_;
};

}  // namespace clm
