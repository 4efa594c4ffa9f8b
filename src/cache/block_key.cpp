#include "cache/block_key.h"

// The state type is only complete with static linking of the API enabled.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace clm {

BlockKey block_key(BlockKey parent, std::span<const int32_t> tokens, const KeyContext& context) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &parent, sizeof parent);
  XXH3_64bits_update(&state, &context.model_fingerprint, sizeof context.model_fingerprint);
  XXH3_64bits_update(&state, &context.cache_namespace, sizeof context.cache_namespace);
  const uint64_t n = tokens.size();
  XXH3_64bits_update(&state, &n, sizeof n);
  XXH3_64bits_update(&state, tokens.data(), tokens.size_bytes());
  const BlockKey key = XXH3_64bits_digest(&state);
  return key == kNoKey ? 1 : key;
}

}  // namespace clm
