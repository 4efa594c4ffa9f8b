#include "app/session_persistence.h"

#include <chrono>

namespace clm {

Result<std::unique_ptr<PersistedSessions>> PersistedSessions::open(const std::string& disk_cache_spec,
                                                                   SessionStore& sessions, const Tokenizer& tokenizer,
                                                                   double session_timeout_s) {
  std::unique_ptr<PersistedSessions> p(new PersistedSessions());
  p->path_ = SessionArchive::path_for(disk_cache_spec);
  auto opened = SessionArchive::open(p->path_);
  if (!opened) return std::unexpected(opened.error());
  p->archive_ = std::move(*opened);
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  p->saver_ = std::make_unique<SessionSaver>(*p->archive_);
  sessions.add_observer(p->saver_.get());
  p->restored_ = sessions.restore(p->archive_->load(session_timeout_s, now_ms), tokenizer, now_ms);
  return p;
}

}  // namespace clm
