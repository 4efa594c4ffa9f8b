// Rewrites KV events so that their block hashes are vLLM's (sha256_cbor,
// vllm_block_hash.h) instead of clmcache's keys. A block's vLLM hash chains
// from its parent's, so the digest of every block some medium still holds
// is remembered (by clmcache key) until the last medium drops it; a block
// whose parent is not remembered cannot be hashed and its event is dropped
// (counted). Redis entries expire in Redis unseen, so blocks held only
// there are not remembered: their removal is not translated either.
// Used on the publisher's thread only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/vllm_block_hash.h"
#include "cache/kv_event.h"

namespace clm {

class KvEventVllmHashes {
 public:
  explicit KvEventVllmHashes(std::string_view seed) : hasher_(seed) {}
  // In place, in order (a chain's parent before its child); events that
  // end up with no block are removed.
  void translate(std::vector<KvEvent>& events);
  uint64_t untranslated_blocks() const { return untranslated_; }

 private:
  struct Held {
    Sha256Digest digest;
    uint32_t media = 0;  // bit i: media_[i] holds the block
  };
  uint32_t medium_bit(const std::string& medium);
  bool translate_stored(KvEvent& e);
  void translate_removed(KvEvent& e);

  VllmBlockHasher hasher_;
  std::vector<std::string> media_;
  std::unordered_map<BlockKey, Held> held_;
  uint64_t untranslated_ = 0;
};

}  // namespace clm
