#include "app/session_hooks.h"

#include "app/cache_namespace.h"

namespace clm {

void SessionPinner::session_remembered(const SessionRecord& turn) {
  // A session's blocks are those of its own namespace, named in its id.
  engine_.pin_session(turn.id, turn.tokens, session_namespace(turn.id), hold_s_);
}

void SessionPinner::session_forgotten(const std::string& id, ForgetCause cause) {
  // A session that timed out may be noticed here (any call that sweeps the
  // store, /stats among them) a moment before the scheduler's own clock
  // lapses its pin; either way the pin ends at the session timeout.
  if (cause == ForgetCause::TimedOut) engine_.unpin_session(id, PinEnd::Lapsed);
  else engine_.unpin_session(id);
}

}  // namespace clm
