// KvCacheManager: the policy over the KvPool. It answers a prompt with a
// ReusePlan (exact prefix blocks to share, cached spans to copy at another
// position, tokens to compute) and applies it; it owns which blocks stay
// resident as cached (leaves before parents, in the order of
// cache/eviction_order.h, optional time-to-live), the prefix index of exact blocks, the span index of every
// cached block, copy-on-write of shared blocks, and the counters of
// CacheStats. Sequences are plain values the caller owns; every change to
// them goes through the manager. Not thread-safe: one owner (the scheduler)
// calls it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/block_key.h"
#include "cache/block_table.h"
#include "cache/cache_deps.h"
#include "cache/cache_options.h"
#include "cache/cache_stats.h"
#include "cache/eviction_order.h"
#include "cache/kv_landing.h"
#include "cache/kv_pool.h"
#include "cache/reuse_plan.h"
#include "cache/span_index.h"
#include "cache/token_label.h"
#include "util/error.h"

namespace clm {

// One live sequence's KV: its block table, the keys of its leading full
// blocks that are registered in (or were attached from) the prefix index,
// and its exactness frontier.
struct CachedSequence {
  explicit CachedSequence(int block_size = 32) : table(block_size) {}
  BlockTable table;
  KeyContext context;
  std::vector<BlockKey> keys;  // keys[b] for the leading blocks already keyed
  // Position of the next token appended; not the slot count once spans are
  // shifted in or slots are evicted.
  int32_t next_pos = 0;
  // Slots at and after this one hold or follow approximate K/V (a shifted
  // span): they are never published as an exact prefix.
  int32_t exact_limit = INT32_MAX;
  // Slots at and after this one may still be rewritten (blend recomputes
  // some of them after a first pass): `written` stops here, so nothing
  // there is cached or kept yet.
  int32_t final_limit = INT32_MAX;
  // Leading slots whose K/V is written for good (the first empty slot, or
  // final_limit).
  int32_t written = 0;
  // Leading full blocks already handed to the cache (exact or span-only).
  std::size_t n_cached_blocks = 0;
  // The splitter's labels of the leading slots (the prompt; later slots are
  // untyped) and the prompt's intent label: kept with the blocks cached from
  // this sequence, for the type guard of later span lookups.
  std::vector<TokenLabel> labels;
  uint8_t intent = TokenLabel::kAnyType;
  // The exactness frontier: the leading slots whose K/V is exactly what a
  // cold run computes.
  int32_t exact_slots() const { return std::min(written, exact_limit); }
};

// Why apply() refused a plan; in both cases nothing changed.
enum class ApplyStatus : uint8_t {
  Ok,
  Stale,   // a source block was evicted or reused since the plan: plan again
  NoRoom,  // the pool cannot hold the sequence now: wait for room
};

class KvCacheManager {
 public:
  KvCacheManager(KvPool& pool, uint64_t model_fingerprint, CacheOptions options = {}, CacheDeps deps = {});

  KvPool& pool() { return pool_; }
  const KvPool& pool() const { return pool_; }

  // Plan, no change: how `prompt` would be assembled from resident blocks
  // under `options`: an exact prefix (whole shared blocks, then the leading
  // tokens of a cached block that continues the prompt only partly, copied),
  // then in mode Shift spans found anywhere after it, then what is left to
  // compute. Never the whole prompt: its last token is always computed, so
  // its logits exist; nor anything from options.reuse_before on. A span is
  // only taken where every token's type in `labels` agrees with the cached
  // one's, from blocks cached under the same intent label;
  // options.block_strategy says how whole it must be.
  ReusePlan plan(std::span<const int32_t> prompt, uint64_t cache_namespace, const ReuseOptions& options,
                 const PromptLabels& labels = {}) const;
  // Starts `seq` (which must be empty) from the plan: prefix blocks shared,
  // the partial block and the spans copied (K re-rotated by their position
  // delta), empty slots reserved for the tokens to compute, and room for
  // `capacity_tokens` tokens in all. All or nothing.
  ApplyStatus apply(CachedSequence& seq, const ReusePlan& plan, std::span<const int32_t> prompt,
                    uint64_t cache_namespace, int capacity_tokens);
  // Prefix-only shorthands of plan/apply: the tokens an exact prefix would
  // supply, and starting a sequence with it attached (no more room).
  int match_prefix(std::span<const int32_t> prompt, uint64_t cache_namespace) const;
  int begin(CachedSequence& seq, std::span<const int32_t> prompt, uint64_t cache_namespace);
  // Blocks reserve() could obtain now: free plus evictable idle cached ones.
  std::size_t available_blocks() const;
  // Room for n more tokens. Evicts idle cached blocks if it must, and copies
  // a shared partial last block so that appending never writes into a block
  // another sequence reads. Fails, changing nothing, if memory is short.
  Status reserve(CachedSequence& seq, int n);
  // Appends one token (room reserved) at the sequence's next position;
  // returns its slot.
  int32_t append(CachedSequence& seq, int32_t token);
  // Fills an empty slot apply() reserved: its K/V is computed now at `pos`.
  void fill(CachedSequence& seq, int32_t slot, int32_t pos);
  // Call after the forward pass wrote the appended tokens' K/V: registers
  // the sequence's newly completed full blocks, those below the exactness
  // frontier in the prefix index, the others as span sources only.
  void commit(CachedSequence& seq);
  // Makes `to` (empty) share every block of `from` that holds tokens,
  // including a partial last block, which is copied on the first write into
  // it. Room `from` reserved beyond its tokens stays its own.
  void fork(const CachedSequence& from, CachedSequence& to);
  // Forgets block b of the sequence (a full, written block; self-managed
  // context): it leaves the table, later slots keep their positions, and
  // the sequence's reference is dropped, so the block is freed unless
  // another sequence holds it or it stays as an idle cached block. Nothing
  // the sequence computes after the hole is published as an exact prefix.
  // The cached block after it is detached from it, so that no sequence holds
  // a cached block without its cached parent (what keeps available_blocks()
  // exact with holes).
  void evict_block(CachedSequence& seq, std::size_t b);
  // Closes the holes forgotten blocks left (`--evict-positions compact`):
  // written slot s gets position s, its K re-rotated by the change, and
  // the next token's position is the written length. Only blocks this
  // sequence alone holds and no index names are rotated in place; a block
  // another sequence holds, or one cached (its index entry records the
  // positions its K was rotated for), is copied first and the copy moved,
  // so no reader ever sees K change under it. All or nothing: when the
  // pool cannot give the copies, nothing changes and 0 is returned (a later
  // call closes every hole then). Returns how many positions it closed.
  int32_t compact_positions(CachedSequence& seq);
  // Ends a sequence: registered blocks stay resident and reusable, others
  // are freed. The tail goes first so leaves are evicted before parents.
  // With partial-block reuse, a partly filled last block is kept too (its
  // leading tokens can be copied by a later prompt that continues them).
  void release(CachedSequence& seq);
  // Drops idle cached blocks idle for longer than the TTL; returns how many.
  std::size_t sweep_expired();
  // Drops every idle cached block.
  void clear_cached();

  // Storage tiers below RAM (tier_promotion.cpp). The keys of the prompt's
  // full blocks, first block first; safe from any thread (it reads only
  // what construction fixed).
  std::vector<BlockKey> prompt_keys(std::span<const int32_t> prompt, uint64_t cache_namespace) const;
  // Publishes entries read from a tier for `prompt` (TierSet::fetch) as idle
  // cached prefix blocks, so that the ordinary prefix hit uses them. Each is
  // checked against the prompt (key, parent, tokens, positions, fingerprint,
  // geometry) and adopted only under a resident parent; the first that does
  // not fit, or finds no free or evictable block, ends it. Returns how many
  // were adopted. No I/O: an entry landed in a reserved block is published
  // in place; one in its own buffer is copied into a block. Takes over every
  // landed block: those not adopted go back to the pool.
  std::size_t adopt(std::span<const int32_t> prompt, uint64_t cache_namespace, std::span<const LandedEntry> entries);
  // A block for a tier read to land in (cache/kv_landing.h): referenced, in
  // no index, taken from the free stack or by evicting an idle cached
  // block; kNoBlock when none can be had. adopt() or return_landing() takes
  // it back.
  BlockId reserve_landing();
  // Gives back a reserved block that holds nothing usable.
  void return_landing(BlockId id);

  // Session pins (engine/session_pins.h): takes a reference on each resident
  // exact prefix block of `tokens`, first block first, at most max_blocks,
  // so that none of them is evictable until release_held(). Returns the
  // blocks held (the leading part of the chain that is resident).
  std::vector<BlockId> hold_prefix(std::span<const int32_t> tokens, uint64_t cache_namespace, std::size_t max_blocks);
  // Drops the references hold_prefix() took, leaves first; the blocks stay
  // cached, evictable again.
  void release_held(std::span<const BlockId> blocks);

  CacheStats stats() const;
  // n tokens a plan copied were recomputed after all (blend): counted as
  // recomputed, no longer as shifted.
  void count_recomputed_copies(int n);

 private:
  // A cached block is exact (registered in the prefix index under `key`) or
  // span-only (approximate K/V, found by content alone). Both are in the
  // span index, stay resident when idle, and form one tree by parent_block.
  struct Meta {
    BlockKey key = kNoKey;  // registered in the index
    bool span_only = false;
    BlockKey parent = kNoKey;
    uint64_t cache_namespace = 0;
    BlockId parent_block = kNoBlock;
    int32_t n_tokens = 0;  // tokens held: block_size, or fewer for a kept tail
    int32_t first_pos = 0;  // position of the first slot; the others follow it
    int32_t cached_children = 0;  // cached blocks naming this one as parent
    uint8_t intent = TokenLabel::kAnyType;  // the intent label of the sequence that cached it
  };

  bool cached(BlockId id) const { return meta(id).key != kNoKey || meta(id).span_only; }
  std::span<const int32_t> stored_tokens(BlockId id) const;
  BlockKey key_of(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) const;
  // Plan parts (reuse_planning.cpp).
  // The prefix covers only `reusable`, the leading tokens a plan may reuse;
  // spans end at index `reusable` at the latest.
  void plan_prefix(ReusePlan& plan, std::span<const int32_t> reusable, uint64_t cache_namespace) const;
  void plan_spans(ReusePlan& plan, std::span<const int32_t> prompt, int32_t reusable, uint64_t cache_namespace,
                  const ReuseOptions& options, const PromptLabels& labels) const;
  // Disjoint spans inside prompt[lo, hi), in prompt order, tail first found;
  // with `whole_blocks`, each trimmed to whole semantic blocks.
  std::vector<ReuseSpan> find_spans(std::span<const int32_t> prompt, uint64_t cache_namespace,
                                    const ReuseOptions& options, const PromptLabels& labels, bool whole_blocks,
                                    int32_t lo, int32_t hi) const;
  // The longest source run matching prompt around a span-index candidate,
  // within [lo, hi) of the prompt, ending where the types disagree.
  ReuseSpan extend_match(std::span<const int32_t> prompt, const PromptLabels& labels, uint64_t cache_namespace,
                         BlockId block, int32_t offset, int32_t at, int32_t lo, int32_t hi) const;
  // The last run of `span` that is whole semantic blocks on both sides
  // (empty if none).
  ReuseSpan whole_blocks_of(const ReuseSpan& span, const PromptLabels& labels) const;
  TokenLabel stored_label(BlockId id, int32_t offset) const {
    return block_labels_[static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_) +
                         static_cast<std::size_t>(offset)];
  }
  // Stores the labels and intent of block b of `seq` with cached block `id`.
  void label_block(BlockId id, const CachedSequence& seq, std::size_t b);
  // Apply parts (reuse_apply.cpp).
  bool plan_is_current(const ReusePlan& plan) const;
  void pin(BlockId id);    // one more reference; an idle block leaves the evictable set
  void unpin(BlockId id);  // drops it again
  void copy_span(const ReuseSpan& span, BlockTable& table);
  void zero_empty_slots(BlockTable& table, int32_t begin, int32_t end);
  // The resident block holding exactly this block of tokens after `parent`.
  BlockId lookup(BlockKey key, BlockKey parent, std::span<const int32_t> tokens, uint64_t cache_namespace) const;
  // The registered child of `parent` sharing the longest run of leading
  // tokens with `rest` (at most a block), and that length.
  std::pair<BlockId, int> best_partial(BlockKey parent, uint64_t cache_namespace, std::span<const int32_t> rest) const;
  // Registers a block under `parent_key` / `parent_block` holding `tokens`.
  // adopt() less the return of the landed blocks it did not adopt.
  std::size_t adopt_chain(std::span<const int32_t> prompt, uint64_t cache_namespace,
                          std::span<const LandedEntry> entries);
  void register_block(BlockId id, BlockKey key, BlockKey parent_key, BlockId parent_block,
                      std::span<const int32_t> tokens, uint64_t cache_namespace);
  // Keeps an approximate block as a span source; `parent_block` is the
  // cached block before it in its sequence, or kNoBlock.
  void register_span_block(BlockId id, BlockId parent_block, std::span<const int32_t> tokens, int32_t first_pos,
                           uint64_t cache_namespace);
  // Links a newly cached block under its parent and into the span index.
  void link_cached(BlockId id, BlockId parent_block, std::span<const int32_t> tokens);
  // At release: keeps a partly filled last block for partial reuse.
  void keep_tail(CachedSequence& seq);
  BlockId allocate_block();  // free stack first, then eviction
  BlockId evict_one();
  void unregister(BlockId id);
  // Removes a cached block from under its parent (it becomes a root); the
  // parent may become an evictable leaf.
  void unlink_from_parent(BlockId id);
  void on_idle(BlockId id);  // refcount reached zero
  double now() const;
  Meta& meta(BlockId id) { return meta_[static_cast<std::size_t>(id)]; }
  const Meta& meta(BlockId id) const { return meta_[static_cast<std::size_t>(id)]; }

  KvPool& pool_;
  uint64_t fingerprint_;
  CacheOptions options_;
  CacheDeps deps_;
  int block_size_;
  std::vector<Meta> meta_;            // [n_blocks]
  EvictionOrder eviction_;            // the idle cached leaves, in the order they go
  std::vector<int32_t> block_tokens_;  // [n_blocks][block_size] tokens of registered blocks
  std::vector<TokenLabel> block_labels_;  // [n_blocks][block_size] their labels
  std::unordered_map<BlockKey, BlockId> index_;
  std::unordered_multimap<BlockKey, BlockId> children_;  // parent key -> registered blocks under it
  std::unordered_multimap<BlockId, BlockId> child_blocks_;  // parent block -> cached blocks under it
  std::vector<uint32_t> generation_;  // [n_blocks] bumped whenever a block stops being cached
  SpanIndex spans_;
  std::size_t n_idle_cached_ = 0;     // idle registered blocks, on a list or not
  std::size_t n_prefix_blocks_ = 0;   // full exact blocks in index_
  CacheStats counters_;
};

}  // namespace clm
