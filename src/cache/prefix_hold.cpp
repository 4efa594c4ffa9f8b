// KvCacheManager::hold_prefix / release_held: references on a resident exact
// prefix chain taken outside any sequence, so that a conversation's history
// stays in RAM between its turns. A held block is an ordinary referenced
// block: not on an eviction list, never swept, shared by prefix hits.
#include "cache/kv_cache_manager.h"

namespace clm {

std::vector<BlockId> KvCacheManager::hold_prefix(std::span<const int32_t> tokens, uint64_t cache_namespace,
                                                 std::size_t max_blocks) {
  std::vector<BlockId> held;
  if (!options_.prefix_caching) return held;
  const KeyContext context{fingerprint_, cache_namespace};
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  BlockKey parent = kNoKey;
  for (std::size_t b = 0; (b + 1) * bs <= tokens.size() && held.size() < max_blocks; ++b) {
    const auto block = tokens.subspan(b * bs, bs);
    const BlockKey key = key_of(parent, block, context);
    const BlockId id = lookup(key, parent, block, cache_namespace);
    if (id == kNoBlock) break;  // evicted, or never computed (a reply's last token)
    pin(id);
    held.push_back(id);
    parent = key;
  }
  return held;
}

void KvCacheManager::release_held(std::span<const BlockId> blocks) {
  // Leaves first, so that they are evicted before their parents.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) unpin(*it);
}

}  // namespace clm
