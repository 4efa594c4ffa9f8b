// The bytes of a stored TierEntry: a safetensors file (8-byte little-endian
// header length, a JSON header, then the data) holding two tensors, "k" and
// "v", each [n_layers, n_kv_heads, block_size, head_dim] in the block's KV
// type, and in "__metadata__" the fingerprint, key, parent key, tokens,
// positions, KV type and checksum. The disk tier writes these bytes as a
// file, the SQLite tier as a blob; any safetensors reader can open them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cache/tier_entry.h"
#include "util/error.h"

namespace clm {

std::vector<std::byte> encode_entry(const TierEntry& entry);

// Parses and checks stored bytes: the structure (sizes, offsets, shapes,
// limits) and the checksum. Does not compare with a model: entry_defect does.
Result<TierEntry> decode_entry(std::span<const std::byte> bytes);

// Decoding in two steps, for a reader that puts the K/V straight where it is
// used (a pool block) instead of staging the whole entry in memory first:
// the header is parsed and can be checked against the model before any K/V
// byte is read, then the tensors are read into their place and the checksum
// is verified over what was read.

// Copies out.size() bytes of a stored entry from `offset` into out; false on
// a short read or an I/O error.
using EntryReader = std::function<bool(uint64_t offset, std::span<std::byte> out)>;

struct EntryHeader {
  TierEntry entry;         // everything but the K/V (entry.kv is empty)
  uint64_t kv_offset = 0;  // where the tensors start in the stored bytes
  uint64_t checksum = 0;   // the checksum the entry was stored with
};

// Parses and checks the header of a stored entry of `size` bytes: structure,
// limits, and that the size is exactly the header plus the tensors.
Result<EntryHeader> read_entry_header(uint64_t size, const EntryReader& read);
// Reads the tensors into kv (header.entry.geometry.block_bytes() bytes, in the
// pool's block layout) and checks the stored checksum over them. On failure kv
// holds garbage: the caller must not use it.
Status read_entry_kv(const EntryHeader& header, const EntryReader& read, std::span<std::byte> kv);
// The most bytes a stored entry of this geometry can have: the length word,
// the largest header the reader accepts, and the tensors. A stored value
// larger than this is refused before it is read (a Redis reply among them).
std::size_t max_entry_bytes(const KvGeometry& geometry);
// An EntryReader over bytes in memory (an SQLite blob, a Redis reply).
EntryReader memory_reader(std::span<const std::byte> bytes);

}  // namespace clm
