// SessionArchive: conversations kept across restarts, one row per session in
// an SQLite database beside the disk cache (WAL, synchronous=FULL: a
// committed row survives a crash). Every row carries a checksum over its
// fields; a row that fails it, or whose token bytes are not whole ids, is
// damaged: loading skips it with one log line and deletes it, never fails.
// Writes are queued to a background thread (the latest state per session,
// so the queue is bounded by the sessions there are) and never block the
// caller on I/O; the destructor writes what is still queued.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tier/session_record.h"
#include "tier/sqlite_db.h"
#include "util/error.h"

namespace clm {

class SessionArchive {
 public:
  // Where the sessions of a --disk-cache spec live: DIR/sessions.sqlite, or
  // FILE.sessions beside an sqlite:FILE store.
  static std::string path_for(const std::string& disk_cache_spec);
  // Opens (creating) the archive. A database too damaged to open is set
  // aside (renamed with a .damaged suffix, one log line) and a new one begun.
  static Result<std::unique_ptr<SessionArchive>> open(const std::string& path);
  ~SessionArchive();
  SessionArchive(const SessionArchive&) = delete;
  SessionArchive& operator=(const SessionArchive&) = delete;

  // Every intact session last used within max_age_s before now_unix_ms,
  // oldest first. Expired and damaged rows are deleted.
  std::vector<SessionRecord> load(double max_age_s, int64_t now_unix_ms);
  // Queue a session's latest turn, or its removal, for the writer.
  void save(SessionRecord record);
  void remove(const std::string& id);
  // Waits until everything queued so far is written.
  void flush();
  // Writes that failed (each logged); the rows keep their previous state.
  uint64_t write_failures() const;

 private:
  SessionArchive(SqliteDb db, std::string path);
  void writer_loop();
  // One transaction for a batch: upserts and deletes.
  Status write(const std::map<std::string, std::optional<SessionRecord>>& batch);
  Status write_rows(const std::map<std::string, std::optional<SessionRecord>>& batch);
  // The rows of load(): intact and recent ones to `out`, the ids of the
  // others to `drop`.
  void read_rows(double max_age_s, int64_t now_unix_ms, std::vector<SessionRecord>& out,
                 std::vector<std::string>& drop);

  SqliteDb db_;  // used by load() before the writer starts, then by the writer only
  std::string path_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::optional<SessionRecord>> pending_;  // nullopt: remove
  bool writing_ = false;
  bool stopping_ = false;
  uint64_t failures_ = 0;
  std::thread writer_;
};

// The checksum a row carries (exposed for tests that forge rows).
uint64_t session_record_checksum(const SessionRecord& record);

}  // namespace clm
