// TierEntry: one full KV block as a storage tier below RAM holds it (disk,
// SQLite, Redis). It carries everything needed to check it before use
// (DESIGN.md promise 2): the model fingerprint, its key and its parent's,
// the tokens and positions it was computed for, the geometry of its bytes,
// and a checksum over all of that. Declared by the cache, which checks and
// adopts entries a tier returns; tier/ stores them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cache/block_key.h"
#include "kernels/kv_geometry.h"

namespace clm {

struct TierEntry {
  uint64_t model_fingerprint = 0;
  BlockKey key = kNoKey;
  BlockKey parent = kNoKey;          // kNoKey for the first block of a chain
  std::vector<int32_t> tokens;       // geometry.block_size token ids
  std::vector<int32_t> positions;    // the position each token's K was rotated to
  KvGeometry geometry;               // the layout of kv (the pool's block layout)
  std::vector<std::byte> kv;         // geometry.block_bytes() bytes
};

// A 64-bit checksum over the entry's metadata and bytes; a stored entry
// whose recomputed checksum differs is damaged.
uint64_t entry_checksum(const TierEntry& entry);
// The same checksum for an entry whose K/V lies elsewhere (a pool block it
// was read into): `entry`'s own kv is ignored, `kv` stands for it.
uint64_t entry_checksum(const TierEntry& entry, std::span<const std::byte> kv);

// Why an entry read back cannot be used, or empty when it can: the shape is
// consistent and it belongs to this model and this key.
const char* entry_defect(const TierEntry& entry, uint64_t model_fingerprint, BlockKey key,
                         const KvGeometry& geometry);
// entry_defect without the size of the K/V bytes: what can be checked from
// a stored entry's header, before its bytes are read.
const char* header_defect(const TierEntry& entry, uint64_t model_fingerprint, BlockKey key,
                          const KvGeometry& geometry);

}  // namespace clm
