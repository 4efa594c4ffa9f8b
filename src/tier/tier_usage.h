// TierUsage: a tier that keeps its entries in storage it owns (a disk cache
// directory, an SQLite file) says how much it holds and how many damaged
// entries it set aside, for /stats and /metrics. Redis does not implement
// it: its memory is the Redis server's, shared with others.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clm {

class TierUsage {
 public:
  virtual ~TierUsage() = default;
  // Bytes of the stored entries (what a size cap counts).
  virtual uint64_t stored_bytes() = 0;
  // Damaged entries moved to quarantine (files or rows), now.
  virtual std::size_t quarantined_entries() = 0;
  // Changes the size cap (0: none) and evicts, least recently used first,
  // until the entries fit under it; returns how many entries went.
  virtual std::size_t set_size_cap(uint64_t max_bytes) = 0;
};

}  // namespace clm
