// SpanIndex: finds cached K/V by content at any offset. Every run of kGram
// consecutive tokens lying inside one cached block is hashed to (block,
// offset); a lookup returns the places whose run hashes like the prompt's.
// Candidates are only hints: the caller verifies tokens and extends a match
// both ways across block boundaries. Any span of at least 2 * kGram - 1
// tokens holds a whole run inside one of its blocks, so it can be found.
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

  static uint64_t hash_gram(std::span<const int32_t> gram);

  // Indexes (removes) every run inside `tokens`, the tokens block `id` holds.
  void add(BlockId id, std::span<const int32_t> tokens);
  void remove(BlockId id, std::span<const int32_t> tokens);

  // Calls fn(block, offset) for at most `limit` places whose run hashes like
  // `gram` (kGram tokens).
  template <class Fn>
  void for_each_candidate(std::span<const int32_t> gram, std::size_t limit, Fn&& fn) const {
    auto [it, last] = entries_.equal_range(hash_gram(gram));
    for (std::size_t n = 0; it != last && n < limit; ++it, ++n) fn(it->second.first, it->second.second);
  }
  std::size_t size() const { return entries_.size(); }

 private:
  std::unordered_multimap<uint64_t, std::pair<BlockId, int32_t>> entries_;
};

}  // namespace clm
