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

KvCacheManager::KvCacheManager(KvPool& pool, uint64_t model_fingerprint, CacheOptions options)
    : pool_(pool),
      fingerprint_(model_fingerprint),
      options_(std::move(options)),
      block_size_(pool.geometry().block_size),
      meta_(pool.n_blocks() + 2),
      block_tokens_(pool.n_blocks() * static_cast<std::size_t>(pool.geometry().block_size)) {
  if (!options_.clock) options_.clock = steady_seconds;
  if (!options_.key_function) options_.key_function = block_key;
  for (int level = 0; level < 2; ++level) {
    const BlockId sentinel = static_cast<BlockId>(pool.n_blocks()) + level;
    meta(sentinel).prev = meta(sentinel).next = sentinel;
  }
}

double KvCacheManager::now() const { return options_.clock(); }

BlockKey KvCacheManager::key_of(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) const {
  const BlockKey key = options_.key_function(parent, tokens, context);
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
  if (!options_.prefix_caching || prompt.size() < 2) return 0;
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = (prompt.size() - 1) / bs;
  BlockKey parent = kNoKey;
  std::size_t b = 0;
  for (; b < n_full; ++b) {
    const auto tokens = prompt.subspan(b * bs, bs);
    const BlockKey key = key_of(parent, tokens, context);
    if (lookup(key, parent, tokens, cache_namespace) == kNoBlock) break;
    parent = key;
  }
  const auto rest = prompt.subspan(b * bs, prompt.size() - 1 - b * bs);
  return static_cast<int>(b * bs) + best_partial(parent, cache_namespace, rest).second;
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
  CLM_CHECK(seq.table.n_slots() == 0 && seq.table.blocks().empty(), "begin on a sequence in use");
  CLM_CHECK(seq.table.block_size() == block_size_, "sequence and pool disagree on block size");
  seq.context = KeyContext{fingerprint_, cache_namespace};
  seq.keys.clear();
  ++counters_.sequences;
  counters_.prompt_tokens += prompt.size();
  if (!options_.prefix_caching || prompt.size() < 2) return 0;

  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = (prompt.size() - 1) / bs;
  counters_.blocks_looked_up += n_full;
  BlockKey parent = kNoKey;
  for (std::size_t b = 0; b < n_full; ++b) {
    const auto tokens = prompt.subspan(b * bs, bs);
    const BlockKey key = key_of(parent, tokens, seq.context);
    const BlockId id = lookup(key, parent, tokens, cache_namespace);
    if (id == kNoBlock) break;
    Meta& m = meta(id);
    if (pool_.refcount(id) == 0) {  // idle: leaves the evictable set
      if (m.in_list) list_remove(id);
      --n_idle_cached_;
    }
    pool_.retain(id);
    if (m.hits++ == 0) ++counters_.cached_blocks_hit;
    if (m.hits >= options_.hot_after_hits) m.level = Level::Hot;
    m.last_access = now();
    seq.table.push_block(id, pool_.block_data(id));
    for (std::size_t i = 0; i < bs; ++i) seq.table.append(tokens[i], static_cast<int32_t>(b * bs + i));
    seq.keys.push_back(key);
    ++counters_.blocks_hit;
    parent = key;
  }
  attach_partial(seq, prompt);
  const int attached = seq.table.n_slots();
  counters_.reused_tokens += static_cast<uint64_t>(attached);
  return attached;
}

void KvCacheManager::attach_partial(CachedSequence& seq, std::span<const int32_t> prompt) {
  // After the shared full blocks, a cached block that continues the prompt
  // for only its first k tokens still holds exactly their K/V (a token's K/V
  // depends on its prefix alone). Its first k slots are copied into a block
  // of our own, never shared, since the rest of it belongs to another text.
  const std::size_t done = static_cast<std::size_t>(seq.table.n_slots());
  const BlockKey parent = seq.keys.empty() ? kNoKey : seq.keys.back();
  const auto rest = prompt.subspan(done, prompt.size() - 1 - done);
  const auto [source, k] = best_partial(parent, seq.context.cache_namespace, rest);
  if (k == 0) return;
  // Pin the source so that making room cannot evict it.
  if (pool_.refcount(source) == 0) {
    if (meta(source).in_list) list_remove(source);
    --n_idle_cached_;
  }
  pool_.retain(source);
  const BlockId copy = allocate_block();
  if (copy != kNoBlock) {
    pool_.copy_block(source, copy);
    seq.table.push_block(copy, pool_.block_data(copy));
    for (int i = 0; i < k; ++i)
      seq.table.append(rest[static_cast<std::size_t>(i)], static_cast<int32_t>(done) + i);
    meta(source).last_access = now();
    ++counters_.partial_block_hits;
  }
  if (pool_.release(source) == 0) on_idle(source);
}

std::size_t KvCacheManager::available_blocks() const {
  // Every idle cached block can be evicted: a sequence holds a block's whole
  // chain of parents, so an idle block's children are idle too and go first.
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

int32_t KvCacheManager::append(CachedSequence& seq, int32_t token, int32_t pos) {
  return seq.table.append(token, pos);
}

void KvCacheManager::commit(CachedSequence& seq) {
  BlockTable& t = seq.table;
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  const std::size_t n_full = static_cast<std::size_t>(t.n_slots()) / bs;
  for (std::size_t b = seq.keys.size(); b < n_full; ++b) {
    const auto tokens = t.block_tokens(b);
    const BlockKey parent = b == 0 ? kNoKey : seq.keys[b - 1];
    const BlockKey key = key_of(parent, tokens, seq.context);
    seq.keys.push_back(key);
    if (!options_.prefix_caching) continue;
    const BlockId id = t.blocks()[b];
    Meta& m = meta(id);
    if (m.key != kNoKey) continue;  // attached from the index, or registered already
    const BlockId parent_block = b == 0 ? kNoBlock : t.blocks()[b - 1];
    // A block is registered only under a registered parent, so that every
    // registered chain is complete and eviction can go leaves first.
    if (parent_block != kNoBlock && meta(parent_block).key != parent) continue;
    if (index_.count(key) != 0) {
      // Another sequence computed the same prefix first (both were admitted
      // before either registered it). Its block holds bitwise the same K/V
      // (promise 1), so adopt it and free ours: later blocks then register
      // under it and the two sequences share from here on.
      const BlockId twin = lookup(key, parent, tokens, seq.context.cache_namespace);
      if (twin == kNoBlock) continue;  // a hash collision, not a twin
      if (pool_.refcount(twin) == 0) {
        if (meta(twin).in_list) list_remove(twin);
        --n_idle_cached_;
      }
      pool_.retain(twin);
      meta(twin).last_access = now();
      t.replace_block(b, twin, pool_.block_data(twin));
      if (pool_.release(id) == 0) pool_.free(id);
      ++counters_.blocks_deduplicated;
      continue;
    }
    register_block(id, key, parent, parent_block, tokens, seq.context.cache_namespace);
    ++counters_.blocks_ever_cached;
  }
}

void KvCacheManager::register_block(BlockId id, BlockKey key, BlockKey parent_key, BlockId parent_block,
                                    std::span<const int32_t> tokens, uint64_t cache_namespace) {
  Meta& m = meta(id);
  m.key = key;
  m.parent = parent_key;
  m.cache_namespace = cache_namespace;
  m.parent_block = parent_block;
  m.n_tokens = static_cast<int32_t>(tokens.size());
  m.hits = 0;
  m.level = Level::Normal;
  m.last_access = now();
  std::copy(tokens.begin(), tokens.end(),
            block_tokens_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(id) * static_cast<std::size_t>(block_size_)));
  index_[key] = id;
  children_.emplace(parent_key, id);
  if (parent_block != kNoBlock) ++meta(parent_block).cached_children;
}

void KvCacheManager::keep_tail(CachedSequence& seq) {
  const BlockTable& t = seq.table;
  const int n_tail = t.n_slots() % block_size_;
  const std::size_t b = static_cast<std::size_t>(t.n_slots() / block_size_);
  if (!options_.prefix_caching || !options_.partial_block_reuse || n_tail == 0 || b >= t.blocks().size()) return;
  const BlockId id = t.blocks()[b];
  // Only a block of its own, under a registered chain, with room unknown to
  // anyone else; a key hashed over fewer tokens never equals a full block's.
  if (pool_.refcount(id) != 1 || meta(id).key != kNoKey || seq.keys.size() != b) return;
  const BlockId parent_block = b == 0 ? kNoBlock : t.blocks()[b - 1];
  const BlockKey parent = b == 0 ? kNoKey : seq.keys[b - 1];
  if (parent_block != kNoBlock && meta(parent_block).key != parent) return;
  const auto tokens = t.block_tokens(b);
  const BlockKey key = key_of(parent, tokens, seq.context);
  if (index_.count(key) != 0) return;  // the same tail is kept already
  register_block(id, key, parent, parent_block, tokens, seq.context.cache_namespace);
  ++counters_.tails_kept;
}

void KvCacheManager::fork(const CachedSequence& from, CachedSequence& to) {
  CLM_CHECK(to.table.blocks().empty(), "fork into a sequence in use");
  CLM_CHECK(to.table.block_size() == block_size_, "sequence and pool disagree on block size");
  to.context = from.context;
  to.keys = from.keys;
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

void KvCacheManager::release(CachedSequence& seq) {
  keep_tail(seq);
  const auto& blocks = seq.table.blocks();
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    if (pool_.release(*it) == 0) on_idle(*it);
  seq.table.clear();
  seq.keys.clear();
}

void KvCacheManager::on_idle(BlockId id) {
  Meta& m = meta(id);
  if (m.key == kNoKey) {
    pool_.free(id);
    return;
  }
  ++n_idle_cached_;
  m.last_access = now();
  if (m.cached_children == 0) list_push_back(id, m.level);
}

void KvCacheManager::unregister(BlockId id) {
  Meta& m = meta(id);
  if (m.in_list) list_remove(id);
  const auto it = index_.find(m.key);
  if (it != index_.end() && it->second == id) index_.erase(it);
  for (auto [first, last] = children_.equal_range(m.parent); first != last; ++first) {
    if (first->second == id) {
      children_.erase(first);
      break;
    }
  }
  if (m.parent_block != kNoBlock) {
    Meta& p = meta(m.parent_block);
    // The parent may now be a leaf: if idle, it becomes evictable.
    if (--p.cached_children == 0 && p.key != kNoKey && pool_.refcount(m.parent_block) == 0 && !p.in_list)
      list_insert_by_age(m.parent_block, p.level);
  }
  m = Meta{};
}

BlockId KvCacheManager::evict_one() {
  BlockId id = list_front(Level::Normal);
  if (id == kNoBlock) id = list_front(Level::Hot);
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
  bool changed = true;
  while (changed) {  // evicting a leaf may expose an expired parent
    changed = false;
    for (Level level : {Level::Normal, Level::Hot}) {
      const BlockId sentinel = static_cast<BlockId>(pool_.n_blocks()) + static_cast<int>(level);
      for (BlockId id = meta(sentinel).next; id != sentinel;) {
        const BlockId next = meta(id).next;
        if (meta(id).last_access < cutoff) {
          unregister(id);
          --n_idle_cached_;
          pool_.free(id);
          ++counters_.evictions_ttl;
          ++dropped;
          changed = true;
        }
        id = next;
      }
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
  s.blocks_used = s.blocks_total - s.blocks_free - s.blocks_cached;
  s.block_bytes = pool_.geometry().block_bytes();
  return s;
}

void KvCacheManager::list_push_back(BlockId id, Level level) {
  list_insert_before(id, static_cast<BlockId>(pool_.n_blocks()) + static_cast<int>(level));
}

void KvCacheManager::list_insert_by_age(BlockId id, Level level) {
  // A list is in last_access order because on_idle appends at now(). A
  // parent that has just become a leaf is old: it goes to its place from the
  // front, not to the tail, or an old chain would outlive newer leaves.
  const BlockId sentinel = static_cast<BlockId>(pool_.n_blocks()) + static_cast<int>(level);
  const double age = meta(id).last_access;
  BlockId at = meta(sentinel).next;
  while (at != sentinel && meta(at).last_access <= age) at = meta(at).next;
  list_insert_before(id, at);
}

void KvCacheManager::list_insert_before(BlockId id, BlockId at) {
  Meta& m = meta(id);
  CLM_CHECK(!m.in_list, "block already on a list");
  m.prev = meta(at).prev;
  m.next = at;
  meta(m.prev).next = id;
  meta(at).prev = id;
  m.in_list = true;
}

void KvCacheManager::list_remove(BlockId id) {
  Meta& m = meta(id);
  CLM_CHECK(m.in_list, "block not on a list");
  meta(m.prev).next = m.next;
  meta(m.next).prev = m.prev;
  m.prev = m.next = kNoBlock;
  m.in_list = false;
}

BlockId KvCacheManager::list_front(Level level) const {
  const BlockId sentinel = static_cast<BlockId>(pool_.n_blocks()) + static_cast<int>(level);
  const BlockId id = meta(sentinel).next;
  return id == sentinel ? kNoBlock : id;
}

}  // namespace clm
