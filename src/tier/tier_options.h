// TierOptions: the storage tiers an engine opens below RAM and the bound of
// their background writer's queue.
#pragma once

#include <cstddef>
#include <vector>

#include "tier/tier_set.h"

namespace clm {

struct TierOptions {
  // Fastest first (a disk cache, then Redis): each factory opens one for the
  // loaded model's fingerprint and KV layout. Empty: RAM only.
  std::vector<TierFactory> factories;
  // The background writer queues at most this many MiB of blocks; beyond it
  // writes are dropped (and counted), never waited for.
  std::size_t write_queue_mb = 256;
};

}  // namespace clm
