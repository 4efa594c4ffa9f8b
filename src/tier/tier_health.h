// TierHealth: a tier that can be unavailable (a remote store behind a
// circuit breaker) says how it is, for /stats and /metrics. Tiers without
// such a state (local files) do not implement it.
#pragma once

#include <string>

namespace clm {

class TierHealth {
 public:
  virtual ~TierHealth() = default;
  // The breaker's state: "closed" (in use), "open" (skipped for a
  // cool-down), "half_open" (one trial call under way).
  virtual std::string breaker_state() const = 0;
};

}  // namespace clm
