#include "cache/span_index.h"

#include "util/check.h"

namespace clm {

uint64_t SpanIndex::hash_gram(std::span<const int32_t> gram, uint64_t cache_namespace) {
  // splitmix64 steps over the namespace and the token ids: cheap, and well
  // mixed enough for a hash table whose hits are verified anyway.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ cache_namespace;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  for (int32_t t : gram) {
    h ^= static_cast<uint32_t>(t);
    h += 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h;
}

void SpanIndex::add(BlockId id, std::span<const int32_t> tokens, uint64_t cache_namespace) {
  for (std::size_t o = 0; o + kGram <= tokens.size(); ++o)
    entries_.emplace(hash_gram(tokens.subspan(o, kGram), cache_namespace), std::pair{id, static_cast<int32_t>(o)});
}

void SpanIndex::remove(BlockId id, std::span<const int32_t> tokens, uint64_t cache_namespace) {
  for (std::size_t o = 0; o + kGram <= tokens.size(); ++o) {
    const std::pair<BlockId, int32_t> entry{id, static_cast<int32_t>(o)};
    bool found = false;
    for (auto [it, last] = entries_.equal_range(hash_gram(tokens.subspan(o, kGram), cache_namespace)); it != last; ++it) {
      if (it->second == entry) {
        entries_.erase(it);
        found = true;
        break;
      }
    }
    CLM_CHECK(found, "span index lost an entry");
  }
}

}  // namespace clm
