// SpanIndex: finds cached K/V by content at any offset. Every run of kGram
// consecutive tokens lying inside one cached block is hashed to (block,
// offset); a lookup returns the places whose run hashes like the prompt's.
// Candidates are only hints: the caller verifies tokens and extends a match
// both ways across block boundaries. Any span of at least 2 * kGram - 1
// tokens holds a whole run inside one of its blocks, so it can be found.
// Runs are hashed with their block's cache namespace: a lookup sees only its
// own namespace's places, so another tenant's blocks can neither be found
// nor crowd out the candidates it is allowed.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>

#include "cache/kv_pool.h"

namespace clm {

class SpanIndex {
 public:
  static constexpr int kGram = 4;

  static uint64_t hash_gram(std::span<const int32_t> gram, uint64_t cache_namespace);

  // Indexes (removes) every run inside `tokens`, the tokens block `id` of
  // `cache_namespace` holds.
  void add(BlockId id, std::span<const int32_t> tokens, uint64_t cache_namespace);
  void remove(BlockId id, std::span<const int32_t> tokens, uint64_t cache_namespace);

  // Calls fn(block, offset) for at most `limit` places of `cache_namespace`
  // whose run hashes like `gram` (kGram tokens).
  template <class Fn>
  void for_each_candidate(std::span<const int32_t> gram, uint64_t cache_namespace, std::size_t limit, Fn&& fn) const {
    auto [it, last] = entries_.equal_range(hash_gram(gram, cache_namespace));
    for (std::size_t n = 0; it != last && n < limit; ++it, ++n) fn(it->second.first, it->second.second);
  }
  std::size_t size() const { return entries_.size(); }

 private:
  std::unordered_multimap<uint64_t, std::pair<BlockId, int32_t>> entries_;
};

}  // namespace clm
