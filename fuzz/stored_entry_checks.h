// What every tier does with the bytes of a stored entry it reads back (a
// file, an SQLite blob, a Redis reply): the two-step decode with the header
// checked against the model before any K/V byte is read, and the one-step
// decode. Shared by the fuzz targets that reach stored entries.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <span>
#include <vector>

#include "cache/tier_entry.h"
#include "support/tier_entries.h"
#include "tier/entry_codec.h"

namespace clm::fuzz {

// The reading tier's pool has test::small_tier_geometry() (the seeds' own):
// a header that does not match it is refused before its K/V is read, as
// the tiers do.
inline void check_stored_entry(std::span<const std::byte> bytes) {
  const KvGeometry expected = test::small_tier_geometry();
  const EntryReader read = memory_reader(bytes);
  if (Result<EntryHeader> header = read_entry_header(bytes.size(), read)) {
    const TierEntry& e = header->entry;
    if (header_defect(e, e.model_fingerprint, e.key, expected) == nullptr) {
      std::vector<std::byte> kv(expected.block_bytes());
      (void)read_entry_kv(*header, read, kv);
    }
  }
  // An entry that decodes encodes back to bytes that decode to the same
  // entry: what one tier writes, another reads unchanged.
  if (Result<TierEntry> entry = decode_entry(bytes)) {
    (void)entry_defect(*entry, entry->model_fingerprint, entry->key, entry->geometry);
    const Result<TierEntry> again = decode_entry(encode_entry(*entry));
    if (!again || !test::same_entry(*entry, *again)) std::abort();
  }
}

}  // namespace clm::fuzz
