// The bytes of a stored TierEntry: a safetensors file (8-byte little-endian
// header length, a JSON header, then the data) holding two tensors, "k" and
// "v", each [n_layers, n_kv_heads, block_size, head_dim] in the block's KV
// type, and in "__metadata__" the fingerprint, key, parent key, tokens,
// positions, KV type and checksum. The disk tier writes these bytes as a
// file, the SQLite tier as a blob; any safetensors reader can open them.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "tier/tier_entry.h"
#include "util/error.h"

namespace clm {

std::vector<std::byte> encode_entry(const TierEntry& entry);

// Parses and checks stored bytes: the structure (sizes, offsets, shapes,
// limits) and the checksum. Does not compare with a model: entry_defect does.
Result<TierEntry> decode_entry(std::span<const std::byte> bytes);

}  // namespace clm
