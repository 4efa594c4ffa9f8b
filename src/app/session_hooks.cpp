#include "app/session_hooks.h"

namespace clm {

void SessionPinner::session_remembered(const SessionRecord& turn) {
  // Requests with a session carry no cache namespace (they share namespace 0).
  scheduler_.pin_session(turn.id, turn.tokens, 0, hold_s_);
}

void SessionPinner::session_forgotten(const std::string& id) { scheduler_.unpin_session(id); }

}  // namespace clm
