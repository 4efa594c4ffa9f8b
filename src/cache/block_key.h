// The identity of a full KV block: key = hash(parent key, token ids, model
// fingerprint, namespace). Equal keys mean the whole prefix up to and
// including the block is (with overwhelming probability) identical; a hit is
// still confirmed against the stored tokens before use.
#pragma once

#include <cstdint>
#include <span>

namespace clm {

using BlockKey = uint64_t;
constexpr BlockKey kNoKey = 0;  // never produced by block_key()

struct KeyContext {
  uint64_t model_fingerprint = 0;
  uint64_t cache_namespace = 0;  // requests in different namespaces never share blocks
};

BlockKey block_key(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context);

}  // namespace clm
