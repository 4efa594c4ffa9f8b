#include "cache/kv_cache_manager.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "util/check.h"

namespace clm {

namespace {
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

KvCacheManager::KvCacheManager(KvPool& pool, uint64_t model_fingerprint, CacheOptions options, CacheDeps deps)
    : pool_(pool),
      fingerprint_(model_fingerprint),
      options_(options),
      deps_(std::move(deps)),
      block_size_(pool.geometry().block_size),
      meta_(pool.n_blocks()),
      eviction_(pool.n_blocks(), options_.hot_after_hits),
      block_tokens_(pool.n_blocks() * static_cast<std::size_t>(pool.geometry().block_size)),
      block_labels_(block_tokens_.size()),
      generation_(pool.n_blocks(), 0) {
  if (!deps_.clock) deps_.clock = steady_seconds;
  if (!deps_.key_function) deps_.key_function = block_key;
  // A fresh pool holds nothing: whatever a listener learned from an
  // earlier run of this instance is gone.
  if (deps_.events) deps_.events->publish(cleared_event());
}

double KvCacheManager::now() const { return deps_.clock(); }

std::span<const int32_t> KvCacheManager::stored_tokens(BlockId id) const {
  return std::span<const int32_t>(block_tokens_)
      .subspan(static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_),
               static_cast<std::size_t>(meta(id).n_tokens));
}

BlockKey KvCacheManager::key_of(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) const {
  const BlockKey key = deps_.key_function(parent, tokens, context);
  return key == kNoKey ? 1 : key;
}

BlockId KvCacheManager::lookup(BlockKey key, BlockKey parent, std::span<const int32_t> tokens,
                               uint64_t cache_namespace) const {
  const auto it = index_.find(key);
  if (it == index_.end()) return kNoBlock;
  const BlockId id = it->second;
  const Meta& m = meta(id);
  // The hash alone is never trusted: the parent, the namespace and the
  // tokens must match (a first block has no parent to tell namespaces apart).
  if (m.parent != parent || m.cache_namespace != cache_namespace ||
      tokens.size() != static_cast<std::size_t>(block_size_))
    return kNoBlock;
  const int32_t* stored = block_tokens_.data() + static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_);
  if (!std::equal(tokens.begin(), tokens.end(), stored)) return kNoBlock;
  return id;
}

int KvCacheManager::match_prefix(std::span<const int32_t> prompt, uint64_t cache_namespace) const {
  return plan(prompt, cache_namespace, ReuseOptions{}).prefix_tokens;
}

std::pair<BlockId, int> KvCacheManager::best_partial(BlockKey parent, uint64_t cache_namespace,
                                                      std::span<const int32_t> rest) const {
  std::pair<BlockId, int> best{kNoBlock, 0};
  if (!options_.partial_block_reuse) return best;
  const std::size_t limit = std::min(rest.size(), static_cast<std::size_t>(block_size_));
  const auto [first, last] = children_.equal_range(parent);
  for (auto it = first; it != last; ++it) {
    const BlockId id = it->second;
    if (meta(id).cache_namespace != cache_namespace) continue;
    const int32_t* stored = block_tokens_.data() + static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_);
    const std::size_t n = std::min(limit, static_cast<std::size_t>(meta(id).n_tokens));
    std::size_t k = 0;
    while (k < n && stored[k] == rest[k]) ++k;
    if (static_cast<int>(k) > best.second) best = {id, static_cast<int>(k)};
  }
  return best;
}

int KvCacheManager::begin(CachedSequence& seq, std::span<const int32_t> prompt, uint64_t cache_namespace) {
  const ReusePlan p = plan(prompt, cache_namespace, ReuseOptions{});
  // With no room asked for beyond the prefix, the only block apply() may
  // need is the partial copy; without it the prefix is whole blocks only.
  if (apply(seq, p, prompt, cache_namespace, p.prefix_tokens) == ApplyStatus::Ok) return seq.table.n_slots();
  const ReusePlan whole = p.shared_blocks_only(static_cast<int>(prompt.size()), block_size_);
  CLM_CHECK(apply(seq, whole, prompt, cache_namespace, whole.prefix_tokens) == ApplyStatus::Ok,
            "attaching shared blocks needs no room");
  return seq.table.n_slots();
}

std::size_t KvCacheManager::available_blocks() const {
  // Every idle cached block can be evicted: whoever holds a cached block
  // holds its cached parent (a chain is attached whole, a fork copies it,
  // and evict_block detaches the block after a hole from the block it
  // forgets), so an idle block's children are idle too and go first.
  return pool_.n_free() + n_idle_cached_;
}

Status KvCacheManager::reserve(CachedSequence& seq, int n) {
  BlockTable& t = seq.table;
  // The next append writes into the block of slot n_slots; if that block is
  // partly filled and shared, it is copied first.
  const std::size_t write_block = static_cast<std::size_t>(t.n_slots() / block_size_);
  const bool copy_last = n > 0 && t.n_slots() % block_size_ != 0 && pool_.refcount(t.blocks()[write_block]) > 1;
  const int missing = t.n_slots() + n - t.capacity();
  const std::size_t new_blocks = missing > 0 ? static_cast<std::size_t>((missing + block_size_ - 1) / block_size_) : 0;
  const std::size_t need = new_blocks + (copy_last ? 1 : 0);
  if (need > available_blocks())
    return fail("kv cache full: need " + std::to_string(need) + " more blocks, " +
                std::to_string(available_blocks()) + " available");
  if (copy_last) {
    const BlockId old = t.blocks()[write_block];
    const BlockId copy = allocate_block();
    CLM_CHECK(copy != kNoBlock, "available_blocks promised a block");
    pool_.copy_block(old, copy);
    CLM_CHECK(pool_.release(old) > 0, "a shared block keeps a reference");
    t.replace_block(write_block, copy, pool_.block_data(copy));
    ++counters_.copy_on_write;
  }
  for (std::size_t i = 0; i < new_blocks; ++i) {
    const BlockId id = allocate_block();
    CLM_CHECK(id != kNoBlock, "available_blocks promised a block");
    t.push_block(id, pool_.block_data(id));
  }
  return {};
}

int32_t KvCacheManager::append(CachedSequence& seq, int32_t token) {
  return seq.table.append(token, seq.next_pos++);
}

void KvCacheManager::count_recomputed_copies(int n) {
  counters_.shifted_tokens -= static_cast<uint64_t>(n);
  counters_.recomputed_tokens += static_cast<uint64_t>(n);
}

void KvCacheManager::fill(CachedSequence& seq, int32_t slot, int32_t pos) {
  seq.table.set_position(slot, pos);
  seq.next_pos = std::max(seq.next_pos, pos + 1);
}

void KvCacheManager::commit(CachedSequence& seq) {
  BlockTable& t = seq.table;
  const auto& positions = t.positions();
  const int32_t limit = std::min(t.n_slots(), seq.final_limit);
  while (seq.written < limit && positions[static_cast<std::size_t>(seq.written)] != kEmptySlot) ++seq.written;
  if (!options_.prefix_caching) return;
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = static_cast<std::size_t>(seq.written) / bs;
  const std::size_t n_exact = static_cast<std::size_t>(seq.exact_slots()) / bs;
  for (std::size_t b = seq.n_cached_blocks; b < n_full; ++b) {
    const auto tokens = t.block_tokens(b);
    const BlockId id = t.blocks()[b];
    const BlockId parent_block = b == 0 ? kNoBlock : t.blocks()[b - 1];
    // Every cached chain is complete, so that eviction can go leaves first:
    // a block is cached only under a cached predecessor.
    if (parent_block != kNoBlock && !cached(parent_block)) return;
    seq.n_cached_blocks = b + 1;
    if (b >= n_exact || seq.keys.size() != b) {
      // Past the frontier: approximate, found by content only.
      if (!cached(id)) {
        register_span_block(id, parent_block, tokens, positions[b * bs], seq.context.cache_namespace);
        label_block(id, seq, b);
      }
      continue;
    }
    const BlockKey parent = b == 0 ? kNoKey : seq.keys[b - 1];
    const BlockKey key = key_of(parent, tokens, seq.context);
    seq.keys.push_back(key);
    Meta& m = meta(id);
    if (m.key != kNoKey) continue;  // attached from the index, or registered already
    if (m.span_only) {               // shared from an approximate sequence
      seq.keys.pop_back();
      continue;
    }
    if (parent_block != kNoBlock && meta(parent_block).key != parent) {
      seq.keys.pop_back();
      register_span_block(id, parent_block, tokens, positions[b * bs], seq.context.cache_namespace);
      label_block(id, seq, b);
      continue;
    }
    if (index_.count(key) != 0) {
      // Another sequence computed the same prefix first (both were admitted
      // before either registered it). Its block holds bitwise the same K/V
      // (promise 1), so adopt it and free ours: later blocks then register
      // under it and the two sequences share from here on.
      const BlockId twin = lookup(key, parent, tokens, seq.context.cache_namespace);
      if (twin == kNoBlock) {  // a hash collision, not a twin: this chain stops being cached here
        seq.keys.pop_back();
        seq.n_cached_blocks = b;
        return;
      }
      pin(twin);
      eviction_.touch(twin, now());
      t.replace_block(b, twin, pool_.block_data(twin));
      if (pool_.release(id) == 0) pool_.free(id);
      ++counters_.blocks_deduplicated;
      continue;
    }
    register_block(id, key, parent, parent_block, tokens, seq.context.cache_namespace);
    label_block(id, seq, b);
    ++counters_.blocks_ever_cached;
    if (deps_.observer)
      deps_.observer->block_computed({key, parent, tokens, std::span<const int32_t>(positions).subspan(b * bs, bs),
                                         std::span<const std::byte>(pool_.block_data(id), pool_.geometry().block_bytes())});
  }
}

void KvCacheManager::register_block(BlockId id, BlockKey key, BlockKey parent_key, BlockId parent_block,
                                    std::span<const int32_t> tokens, uint64_t cache_namespace) {
  Meta& m = meta(id);
  m.key = key;
  m.parent = parent_key;
  m.cache_namespace = cache_namespace;
  m.first_pos = parent_block == kNoBlock ? 0 : meta(parent_block).first_pos + block_size_;
  index_[key] = id;
  children_.emplace(parent_key, id);
  link_cached(id, parent_block, tokens);
  if (tokens.size() != static_cast<std::size_t>(block_size_)) return;
  ++n_prefix_blocks_;
  if (deps_.observer) deps_.observer->block_resident(key);
  if (deps_.events)
    deps_.events->publish(stored_event(kRamMedium, key, parent_key, {tokens.begin(), tokens.end()}));
}

void KvCacheManager::register_span_block(BlockId id, BlockId parent_block, std::span<const int32_t> tokens,
                                         int32_t first_pos, uint64_t cache_namespace) {
  Meta& m = meta(id);
  m.span_only = true;
  m.cache_namespace = cache_namespace;
  m.first_pos = first_pos;
  link_cached(id, parent_block, tokens);
}

void KvCacheManager::link_cached(BlockId id, BlockId parent_block, std::span<const int32_t> tokens) {
  Meta& m = meta(id);
  m.parent_block = parent_block;
  m.n_tokens = static_cast<int32_t>(tokens.size());
  eviction_.reset(id, now());
  std::copy(tokens.begin(), tokens.end(),
            block_tokens_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_)));
  spans_.add(id, tokens, m.cache_namespace);
  if (parent_block != kNoBlock) {
    ++meta(parent_block).cached_children;
    child_blocks_.emplace(parent_block, id);
  }
}

void KvCacheManager::label_block(BlockId id, const CachedSequence& seq, std::size_t b) {
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n = static_cast<std::size_t>(meta(id).n_tokens);
  for (std::size_t o = 0; o < n; ++o) {
    const std::size_t slot = b * bs + o;
    block_labels_[static_cast<std::size_t>(id) * bs + o] = slot < seq.labels.size() ? seq.labels[slot] : TokenLabel{};
  }
  meta(id).intent = seq.intent;
}

void KvCacheManager::keep_tail(CachedSequence& seq) {
  const BlockTable& t = seq.table;
  const int n_tail = t.n_slots() % block_size_;
  const std::size_t b = static_cast<std::size_t>(t.n_slots() / block_size_);
  if (!options_.prefix_caching || !options_.partial_block_reuse || n_tail == 0 || b >= t.blocks().size()) return;
  const BlockId id = t.blocks()[b];
  // Only a block of its own, after every full block was cached, with every
  // slot written and room unknown to anyone else.
  if (pool_.refcount(id) != 1 || cached(id) || seq.n_cached_blocks != b || seq.written != t.n_slots()) return;
  const BlockId parent_block = b == 0 ? kNoBlock : t.blocks()[b - 1];
  if (parent_block != kNoBlock && !cached(parent_block)) return;
  const auto tokens = t.block_tokens(b);
  const std::size_t first = b * static_cast<std::size_t>(block_size_);
  if (seq.exact_slots() < t.n_slots() || seq.keys.size() != b) {
    register_span_block(id, parent_block, tokens, t.positions()[first], seq.context.cache_namespace);
    label_block(id, seq, b);
    ++counters_.tails_kept;
    return;
  }
  const BlockKey parent = b == 0 ? kNoKey : seq.keys[b - 1];
  if (parent_block != kNoBlock && meta(parent_block).key != parent) return;
  // A key hashed over fewer tokens never equals a full block's.
  const BlockKey key = key_of(parent, tokens, seq.context);
  if (index_.count(key) != 0) return;  // the same tail is kept already
  register_block(id, key, parent, parent_block, tokens, seq.context.cache_namespace);
  label_block(id, seq, b);
  ++counters_.tails_kept;
}

void KvCacheManager::fork(const CachedSequence& from, CachedSequence& to) {
  CLM_CHECK(to.table.blocks().empty(), "fork into a sequence in use");
  CLM_CHECK(to.table.block_size() == block_size_, "sequence and pool disagree on block size");
  to.context = from.context;
  to.keys = from.keys;
  to.next_pos = from.next_pos;
  to.exact_limit = from.exact_limit;
  to.final_limit = from.final_limit;
  to.written = from.written;
  to.n_cached_blocks = from.n_cached_blocks;
  to.labels = from.labels;
  to.intent = from.intent;
  const BlockTable& src = from.table;
  // Only blocks holding tokens are shared. Room reserved ahead is not: both
  // sequences would write their next tokens into it, and reserve() copies a
  // shared block only when it is the partly filled one.
  const std::size_t n_held = static_cast<std::size_t>((src.n_slots() + block_size_ - 1) / block_size_);
  for (std::size_t b = 0; b < n_held; ++b) {
    const BlockId id = src.blocks()[b];
    pool_.retain(id);
    to.table.push_block(id, pool_.block_data(id));
  }
  for (int s = 0; s < src.n_slots(); ++s) to.table.append(src.tokens()[static_cast<std::size_t>(s)], src.positions()[static_cast<std::size_t>(s)]);
}

void KvCacheManager::evict_block(CachedSequence& seq, std::size_t b) {
  BlockTable& t = seq.table;
  const int32_t bs = block_size_;
  const int32_t first = static_cast<int32_t>(b) * bs;
  CLM_CHECK(b < t.blocks().size() && first + bs <= seq.written, "evict_block of a block not written in full");
  const BlockId id = t.blocks()[b];
  // Every holder of a cached block holds its cached parent (a chain is
  // attached whole, a fork copies the table): that is why an idle cached
  // block is always evictable and available_blocks() is exact. This
  // sequence keeps the block after the hole, so it stops being a child of
  // the one it forgets.
  if (b + 1 < t.blocks().size()) {
    const BlockId next = t.blocks()[b + 1];
    if (cached(next) && meta(next).parent_block == id) unlink_from_parent(next);
  }
  t.erase_block(b);
  // Later slots move down a block. Keys describe leading blocks that form
  // an exact prefix: those after the hole no longer do.
  if (seq.keys.size() > b) seq.keys.resize(b);
  if (seq.n_cached_blocks > b) --seq.n_cached_blocks;
  seq.written -= bs;
  // What is computed from now on attends to a context with a hole: never
  // what a cold run computes.
  seq.exact_limit = std::min(seq.exact_limit, first);
  if (seq.final_limit != INT32_MAX && seq.final_limit > first) seq.final_limit = std::max(first, seq.final_limit - bs);
  if (seq.labels.size() > static_cast<std::size_t>(first)) {
    const auto end = std::min(seq.labels.size(), static_cast<std::size_t>(first + bs));
    seq.labels.erase(seq.labels.begin() + first, seq.labels.begin() + static_cast<std::ptrdiff_t>(end));
  }
  if (pool_.release(id) == 0) on_idle(id);
  ++counters_.blocks_forgotten;
}

void KvCacheManager::release(CachedSequence& seq) {
  keep_tail(seq);
  const auto& blocks = seq.table.blocks();
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    if (pool_.release(*it) == 0) on_idle(*it);
  seq.table.clear();
  seq.keys.clear();
  seq.next_pos = 0;
  seq.exact_limit = INT32_MAX;
  seq.final_limit = INT32_MAX;
  seq.written = 0;
  seq.n_cached_blocks = 0;
  seq.labels.clear();
  seq.intent = TokenLabel::kAnyType;
}

void KvCacheManager::on_idle(BlockId id) {
  Meta& m = meta(id);
  if (!cached(id)) {
    pool_.free(id);
    return;
  }
  ++n_idle_cached_;
  eviction_.touch(id, now());
  if (m.cached_children == 0) eviction_.enlist(id);
}

void KvCacheManager::unregister(BlockId id) {
  Meta& m = meta(id);
  if (eviction_.listed(id)) eviction_.delist(id);
  if (m.key != kNoKey) {
    const auto it = index_.find(m.key);
    if (it != index_.end() && it->second == id) {
      index_.erase(it);
      if (m.n_tokens == block_size_) {
        --n_prefix_blocks_;
        if (deps_.observer) deps_.observer->block_gone(m.key);
        if (deps_.events)
          deps_.events->publish(removed_event(kRamMedium, {m.key}));
      }
    }
    for (auto [first, last] = children_.equal_range(m.parent); first != last; ++first) {
      if (first->second == id) {
        children_.erase(first);
        break;
      }
    }
  }
  spans_.remove(id, stored_tokens(id), m.cache_namespace);
  unlink_from_parent(id);
  ++generation_[static_cast<std::size_t>(id)];
  m = Meta{};
}

void KvCacheManager::unlink_from_parent(BlockId id) {
  Meta& m = meta(id);
  const BlockId parent = m.parent_block;
  if (parent == kNoBlock) return;
  for (auto [first, last] = child_blocks_.equal_range(parent); first != last; ++first) {
    if (first->second == id) {
      child_blocks_.erase(first);
      break;
    }
  }
  m.parent_block = kNoBlock;
  Meta& p = meta(parent);
  // The parent may now be a leaf: if idle, it becomes evictable.
  if (--p.cached_children == 0 && cached(parent) && pool_.refcount(parent) == 0 && !eviction_.listed(parent))
    eviction_.enlist(parent);
}

BlockId KvCacheManager::evict_one() {
  const BlockId id = eviction_.victim();
  if (id == kNoBlock) return kNoBlock;
  unregister(id);
  --n_idle_cached_;
  ++counters_.evictions_capacity;
  return id;
}

BlockId KvCacheManager::allocate_block() {
  BlockId id = pool_.allocate();
  if (id != kNoBlock) return id;
  id = evict_one();
  if (id != kNoBlock) pool_.retain(id);  // idle -> referenced, reused in place
  return id;
}

std::size_t KvCacheManager::sweep_expired() {
  if (options_.ttl_seconds <= 0.0) return 0;
  const double cutoff = now() - options_.ttl_seconds;
  std::size_t dropped = 0;
  // Evicting a leaf may expose an expired parent: another round.
  for (std::vector<BlockId> expired = eviction_.unused_since(cutoff); !expired.empty();
       expired = eviction_.unused_since(cutoff)) {
    for (BlockId id : expired) {
      unregister(id);
      --n_idle_cached_;
      pool_.free(id);
      ++counters_.evictions_ttl;
      ++dropped;
    }
  }
  return dropped;
}

void KvCacheManager::clear_cached() {
  for (BlockId id = evict_one(); id != kNoBlock; id = evict_one()) {
    --counters_.evictions_capacity;  // not a capacity decision
    pool_.free(id);
  }
}

CacheStats KvCacheManager::stats() const {
  CacheStats s = counters_;
  s.blocks_total = pool_.n_blocks();
  s.blocks_free = pool_.n_free();
  s.blocks_cached = n_idle_cached_;
  s.prefix_blocks = n_prefix_blocks_;
  s.blocks_used = s.blocks_total - s.blocks_free - s.blocks_cached;
  s.block_bytes = pool_.geometry().block_bytes();
  return s;
}

}  // namespace clm
