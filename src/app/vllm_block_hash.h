// vLLM's block hash with its `sha256_cbor` algorithm, so that a router
// hashing a prompt itself (llm-d's indexer) finds the blocks clmcache
// announces: hash = SHA-256 of the canonical CBOR of the array
// [parent hash (32 bytes), [token ids], extra keys], the first block's
// parent being SHA-256 of the CBOR text of the seed (vLLM's
// PYTHONHASHSEED). extra_keys is nil: no LoRA, no images, no cache salt.
// As an event hash vLLM takes the digest's low 64 bits (big-endian).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "util/sha256.h"

namespace clm {

class VllmBlockHasher {
 public:
  explicit VllmBlockHasher(std::string_view seed);
  // parent: nullptr for a prompt's first block.
  Sha256Digest block(const Sha256Digest* parent, std::span<const int32_t> tokens) const;
  const Sha256Digest& none_hash() const { return none_hash_; }
  static uint64_t as_event_hash(const Sha256Digest& d);

 private:
  Sha256Digest none_hash_;
};

}  // namespace clm
