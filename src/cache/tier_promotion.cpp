// KvCacheManager and the storage tiers below RAM: the chain keys a tier is
// asked for, and the adoption of what it returned as cached prefix blocks.
// An adopted block is bitwise what was computed for the same prefix by the
// same model (its checksum, key, tokens and positions are checked), so a
// prefix hit on it keeps prefix mode's promise across tiers.
#include <cstring>

#include "cache/kv_cache_manager.h"
#include "util/check.h"

namespace clm {

std::vector<BlockKey> KvCacheManager::prompt_keys(std::span<const int32_t> prompt, uint64_t cache_namespace) const {
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  std::vector<BlockKey> keys;
  BlockKey parent = kNoKey;
  for (std::size_t b = 0; (b + 1) * bs <= prompt.size(); ++b) {
    parent = key_of(parent, prompt.subspan(b * bs, bs), context);
    keys.push_back(parent);
  }
  return keys;
}

BlockId KvCacheManager::reserve_landing() { return allocate_block(); }

void KvCacheManager::return_landing(BlockId id) {
  CLM_CHECK(pool_.release(id) == 0, "a landing block has one reference");
  pool_.free(id);
}

std::size_t KvCacheManager::adopt(std::span<const int32_t> prompt, uint64_t cache_namespace,
                                  std::span<const LandedEntry> entries) {
  const std::size_t adopted = adopt_chain(prompt, cache_namespace, entries);
  // The landed blocks that were not adopted hold a tier's bytes nobody
  // publishes: back to the pool.
  for (const LandedEntry& e : entries)
    if (e.block != kNoBlock && !cached(e.block)) return_landing(e.block);
  return adopted;
}

std::size_t KvCacheManager::adopt_chain(std::span<const int32_t> prompt, uint64_t cache_namespace,
                                        std::span<const LandedEntry> entries) {
  if (!options_.prefix_caching || entries.empty()) return 0;
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  // The chain walked so far stays pinned, so that making room for the next
  // block never evicts its parent.
  std::vector<BlockId> held;
  BlockKey parent = kNoKey;
  BlockId parent_block = kNoBlock;
  std::size_t next = 0;
  std::size_t adopted = 0;
  for (std::size_t b = 0; (b + 1) * bs <= prompt.size() && next < entries.size(); ++b) {
    const auto tokens = prompt.subspan(b * bs, bs);
    const BlockKey key = key_of(parent, tokens, context);
    if (const BlockId resident = lookup(key, parent, tokens, cache_namespace); resident != kNoBlock) {
      if (entries[next].key == key) ++next;  // it came back to RAM since the fetch
      pin(resident);
      held.push_back(resident);
      parent = key;
      parent_block = resident;
      continue;
    }
    const LandedEntry& e = entries[next++];
    if (index_.count(key) != 0 || e.key != key || e.parent != parent) break;  // not this chain's continuation
    const bool landed = e.block != kNoBlock;
    if (landed ? header_defect(e, fingerprint_, key, pool_.geometry()) != nullptr
               : entry_defect(e, fingerprint_, key, pool_.geometry()) != nullptr)
      break;
    if (!std::equal(tokens.begin(), tokens.end(), e.tokens.begin())) break;  // a hash collision
    bool natural_positions = true;
    for (std::size_t i = 0; i < bs; ++i) natural_positions &= e.positions[i] == static_cast<int32_t>(b * bs + i);
    if (!natural_positions) break;
    // Referenced either way: not evictable while the chain grows.
    const BlockId id = landed ? e.block : allocate_block();
    if (id == kNoBlock) break;
    if (!landed) std::memcpy(pool_.block_data(id), e.kv.data(), e.kv.size());
    register_block(id, key, parent, parent_block, tokens, cache_namespace);
    ++counters_.blocks_ever_cached;
    held.push_back(id);
    parent = key;
    parent_block = id;
    ++adopted;
  }
  // Leaves first, so that they are evicted before their parents.
  for (auto it = held.rbegin(); it != held.rend(); ++it) unpin(*it);
  return adopted;
}

}  // namespace clm
