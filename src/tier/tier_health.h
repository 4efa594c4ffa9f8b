// TierHealth: a tier that can be unavailable (a remote store behind a
// circuit breaker) says how it is, for /stats and /metrics. Tiers without
// such a state (local files) do not implement it.
#pragma once

#include <cstdint>
#include <string>

namespace clm {

class TierHealth {
 public:
  virtual ~TierHealth() = default;
  // The breaker's state: "closed" (in use), "open" (skipped for a
  // cool-down), "half_open" (one trial call under way).
  virtual std::string breaker_state() const = 0;
  // Values read back and refused: they failed decoding or a check, and of
  // those, the ones whose MAC did not verify (a forgery, or another secret).
  // Each was a miss; an operator sees here that someone writes to the peer.
  virtual uint64_t damaged_values() const = 0;
  virtual uint64_t unauthenticated_values() const = 0;
};

}  // namespace clm
