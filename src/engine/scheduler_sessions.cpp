// Session pins through the scheduler: callers on any thread queue pin and
// unpin calls, and the scheduler's own thread applies them at the start of a
// step, so the pins (and the blocks they hold) change only between forward
// passes.
#include <string>
#include <utility>
#include <vector>

#include "engine/scheduler.h"

namespace clm {

void Scheduler::pin_session(std::string id, std::vector<int32_t> tokens, uint64_t cache_namespace, double hold_s) {
  if (tokens.empty()) return unpin_session(std::move(id));
  {
    std::lock_guard lock(mu_);
    pin_calls_.push_back({std::move(id), std::move(tokens), cache_namespace, hold_s});
  }
  wake_.notify_all();
}

void Scheduler::unpin_session(std::string id, PinEnd end) {
  {
    std::lock_guard lock(mu_);
    pin_calls_.push_back({std::move(id), {}, 0, 0.0, end});
  }
  wake_.notify_all();
}

bool Scheduler::apply_session_pins() {
  std::vector<PinCall> calls;
  {
    std::lock_guard lock(mu_);
    calls.swap(pin_calls_);
  }
  for (const PinCall& c : calls) {
    if (c.tokens.empty()) pins_.unpin(c.session, c.end);
    else pins_.pin(c.session, c.tokens, c.cache_namespace, c.hold_s);
  }
  pins_.expire();
  return !calls.empty();
}

}  // namespace clm
