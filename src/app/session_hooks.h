// What a change to the server's sessions sets off: SessionPinner keeps a
// session's last turn pinned in the scheduler's cache for the session
// timeout (engine/session_pins.h); SessionSaver keeps it in the session
// archive beside the disk cache (--persist-sessions). Both only queue work.
#pragma once

#include "engine/engine.h"
#include "engine/session_store.h"
#include "tier/session_archive.h"

namespace clm {

class SessionPinner : public SessionObserver {
 public:
  SessionPinner(Engine& engine, double hold_s) : engine_(engine), hold_s_(hold_s) {}
  void session_remembered(const SessionRecord& turn) override;
  void session_forgotten(const std::string& id, ForgetCause cause) override;

 private:
  Engine& engine_;
  double hold_s_;
};

class SessionSaver : public SessionObserver {
 public:
  explicit SessionSaver(SessionArchive& archive) : archive_(archive) {}
  void session_remembered(const SessionRecord& turn) override { archive_.save(turn); }
  void session_forgotten(const std::string& id, ForgetCause) override { archive_.remove(id); }

 private:
  SessionArchive& archive_;
};

}  // namespace clm
