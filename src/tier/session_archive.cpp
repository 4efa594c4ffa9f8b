#include "tier/session_archive.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <xxhash.h>

namespace clm {

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, text BLOB NOT NULL, tokens BLOB NOT NULL,"
    " last_used_ms INTEGER NOT NULL, checksum INTEGER NOT NULL)";

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

Result<SqliteDb> open_db(const std::string& path) {
  auto db = SqliteDb::open(path);
  if (!db) return db;
  // Sessions are few and small: every commit reaches the disk.
  if (auto sync = db->exec("PRAGMA synchronous=FULL"); !sync) return std::unexpected(sync.error());
  if (auto schema = db->exec(kSchema); !schema) return std::unexpected(schema.error());
  return db;
}

}  // namespace

uint64_t session_record_checksum(const SessionRecord& r) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  const uint64_t sizes[3] = {r.id.size(), r.text.size(), r.tokens.size()};
  XXH3_64bits_update(state, sizes, sizeof sizes);
  XXH3_64bits_update(state, r.id.data(), r.id.size());
  XXH3_64bits_update(state, r.text.data(), r.text.size());
  XXH3_64bits_update(state, r.tokens.data(), r.tokens.size() * sizeof(int32_t));
  XXH3_64bits_update(state, &r.last_used_unix_ms, sizeof r.last_used_unix_ms);
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

std::string SessionArchive::path_for(const std::string& spec) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (spec.starts_with(kSqlite)) return spec.substr(kSqlite.size()) + ".sessions";
  return (std::filesystem::path(spec) / "sessions.sqlite").string();
}

Result<std::unique_ptr<SessionArchive>> SessionArchive::open(const std::string& path) {
  auto db = open_db(path);
  if (!db) {
    // The sessions are a convenience, not the cache: a damaged database is
    // set aside, and the server starts with none.
    const std::string aside = path + ".damaged-" + std::to_string(std::time(nullptr));
    std::fprintf(stderr, "clmcache: session archive %s is unusable (%s); set aside as %s\n", path.c_str(),
                 db.error().message.c_str(), aside.c_str());
    std::error_code ec;
    std::filesystem::rename(path, aside, ec);
    if (ec) return fail("cannot set aside the damaged session archive " + path + ": " + ec.message());
    for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
    db = open_db(path);
    if (!db) return fail("cannot open the session archive " + path + ": " + db.error().message);
  }
  std::unique_ptr<SessionArchive> archive(new SessionArchive(std::move(*db), path));
  return archive;
}

SessionArchive::SessionArchive(SqliteDb db, std::string path) : db_(std::move(db)), path_(std::move(path)) {
  writer_ = std::thread([this] { writer_loop(); });
}

SessionArchive::~SessionArchive() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

std::vector<SessionRecord> SessionArchive::load(double max_age_s, int64_t now_unix_ms) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_.empty() && !writing_; });  // the database is this thread's meanwhile
  std::vector<SessionRecord> out;
  std::vector<std::string> drop;
  read_rows(max_age_s, now_unix_ms, out, drop);
  if (!drop.empty()) {
    std::map<std::string, std::optional<SessionRecord>> batch;
    for (std::string& id : drop) batch.emplace(std::move(id), std::nullopt);
    if (auto done = write(batch); !done) {
      ++failures_;
      std::fprintf(stderr, "clmcache: session archive %s: %s\n", path_.c_str(), done.error().message.c_str());
    }
  }
  return out;
}

void SessionArchive::read_rows(double max_age_s, int64_t now_unix_ms, std::vector<SessionRecord>& out,
                               std::vector<std::string>& drop) {
  auto rows = db_.prepare("SELECT id, text, tokens, last_used_ms, checksum FROM sessions ORDER BY last_used_ms");
  if (!rows) {
    std::fprintf(stderr, "clmcache: session archive %s: %s\n", path_.c_str(), rows.error().message.c_str());
    return;
  }
  for (;;) {
    auto row = rows->step();
    if (!row) {
      std::fprintf(stderr, "clmcache: session archive %s: %s\n", path_.c_str(), row.error().message.c_str());
      break;
    }
    if (!*row) break;
    SessionRecord r;
    r.id = rows->column_text(0);
    const std::vector<std::byte> text = rows->column_blob(1);
    const std::vector<std::byte> tokens = rows->column_blob(2);
    r.last_used_unix_ms = rows->column_int(3);
    const uint64_t checksum = rows->column_key(4);
    const char* damage = nullptr;
    if (tokens.size() % sizeof(int32_t) != 0) {
      damage = "its token bytes are not whole ids";
    } else {
      r.text.assign(reinterpret_cast<const char*>(text.data()), text.size());
      r.tokens.resize(tokens.size() / sizeof(int32_t));
      if (!tokens.empty()) std::memcpy(r.tokens.data(), tokens.data(), tokens.size());
      if (session_record_checksum(r) != checksum) damage = "its checksum does not match";
    }
    if (damage) {
      // The id may be damaged too: it is not printed, only its length.
      std::fprintf(stderr, "clmcache: session archive %s: skipped a damaged session (id of %zu bytes): %s\n",
                   path_.c_str(), r.id.size(), damage);
      drop.push_back(r.id);
    } else if (static_cast<double>(now_unix_ms - r.last_used_unix_ms) > max_age_s * 1000.0) {
      drop.push_back(r.id);
    } else {
      out.push_back(std::move(r));
    }
  }
}

void SessionArchive::save(SessionRecord record) {
  {
    std::lock_guard lock(mu_);
    std::string id = record.id;
    pending_[std::move(id)] = std::move(record);
  }
  cv_.notify_all();
}

void SessionArchive::remove(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    pending_[id] = std::nullopt;
  }
  cv_.notify_all();
}

void SessionArchive::flush() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_.empty() && !writing_; });
}

uint64_t SessionArchive::write_failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

void SessionArchive::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything is written
    std::map<std::string, std::optional<SessionRecord>> batch;
    batch.swap(pending_);
    writing_ = true;
    lock.unlock();
    const Status done = write(batch);
    lock.lock();
    writing_ = false;
    if (!done) {
      ++failures_;
      std::fprintf(stderr, "clmcache: session archive %s: %s\n", path_.c_str(), done.error().message.c_str());
    }
    cv_.notify_all();
  }
}

Status SessionArchive::write(const std::map<std::string, std::optional<SessionRecord>>& batch) {
  if (auto begin = db_.exec("BEGIN IMMEDIATE"); !begin) return begin;
  Status status = write_rows(batch);
  if (!status) {
    (void)db_.exec("ROLLBACK");
    return status;
  }
  return db_.exec("COMMIT");
}

Status SessionArchive::write_rows(const std::map<std::string, std::optional<SessionRecord>>& batch) {
  auto upsert = db_.prepare(
      "INSERT INTO sessions (id, text, tokens, last_used_ms, checksum) VALUES (?1, ?2, ?3, ?4, ?5)"
      " ON CONFLICT(id) DO UPDATE SET text = ?2, tokens = ?3, last_used_ms = ?4, checksum = ?5");
  auto erase = db_.prepare("DELETE FROM sessions WHERE id = ?1");
  Status status = !upsert ? Status(std::unexpected(upsert.error())) : !erase ? Status(std::unexpected(erase.error())) : Status{};
  for (const auto& [id, record] : batch) {
    if (!status) break;
    if (record) {
      const auto tokens = std::as_bytes(std::span(record->tokens));
      status = upsert->bind(1, id)
                   .bind(2, bytes_of(record->text))
                   .bind(3, tokens)
                   .bind(4, record->last_used_unix_ms)
                   .bind_key(5, session_record_checksum(*record))
                   .run();
      upsert->reset();
    } else {
      status = erase->bind(1, id).run();
      erase->reset();
    }
  }
  return status;
}

}  // namespace clm
