// A TierEntry as one compact byte string, for stores that hold opaque values
// (Redis). Little-endian header (magic, version, fingerprint, keys,
// geometry, counts), then the tokens, the positions, the K/V bytes and the
// entry's checksum. Decoding trusts nothing: every size is checked against
// the bytes actually there before anything is allocated, and the checksum
// is recomputed (DESIGN.md promise 2).
#pragma once

#include <span>
#include <string>

#include "tier/tier_entry.h"
#include "util/error.h"

namespace clm {

std::string encode_entry(const TierEntry& entry);

// The entry held in `bytes`, or why they are not one (truncated, wrong
// magic or version, sizes that disagree, checksum mismatch).
Result<TierEntry> decode_entry(std::span<const std::byte> bytes);

}  // namespace clm
