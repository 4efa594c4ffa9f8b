// --persist-sessions: the server's sessions kept in the session archive
// beside the disk cache, resumed at start and saved as they change. Must
// outlive the SessionStore it watches (declare it first).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "app/session_hooks.h"
#include "engine/session_store.h"
#include "model/tokenizer.h"
#include "tier/session_archive.h"
#include "util/error.h"

namespace clm {

class PersistedSessions {
 public:
  // Opens the archive of disk_cache_spec, restores its unexpired sessions
  // into `sessions` and saves every later change.
  static Result<std::unique_ptr<PersistedSessions>> open(const std::string& disk_cache_spec, SessionStore& sessions,
                                                         const Tokenizer& tokenizer, double session_timeout_s);
  std::size_t restored() const { return restored_; }
  const std::string& path() const { return path_; }

 private:
  PersistedSessions() = default;
  std::string path_;
  std::unique_ptr<SessionArchive> archive_;
  std::unique_ptr<SessionSaver> saver_;
  std::size_t restored_ = 0;
};

}  // namespace clm
