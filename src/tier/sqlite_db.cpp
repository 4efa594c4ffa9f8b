#include "tier/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace clm {

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

SqliteStatement::~SqliteStatement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, const std::string& text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, std::span<const std::byte> blob) {
  // An empty span may have no data pointer, which SQLite would store as NULL.
  if (blob.empty()) sqlite3_bind_zeroblob(stmt_, index, 0);
  else sqlite3_bind_blob64(stmt_, index, blob.data(), blob.size(), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> SqliteStatement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(std::string("sqlite: ") + sqlite3_errmsg(db_));
}

Status SqliteStatement::run() {
  for (;;) {
    auto more = step();
    if (!more) return std::unexpected(more.error());
    if (!*more) {
      sqlite3_reset(stmt_);
      return {};
    }
  }
}

void SqliteStatement::reset() { sqlite3_reset(stmt_); }

int64_t SqliteStatement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }

std::string SqliteStatement::column_text(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  return text ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index))) : std::string();
}

std::vector<std::byte> SqliteStatement::column_blob(int index) const {
  const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(stmt_, index));
  const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index));
  return data ? std::vector<std::byte>(data, data + size) : std::vector<std::byte>();
}

std::span<const std::byte> SqliteStatement::column_blob_view(int index) const {
  const auto* data = static_cast<const std::byte*>(sqlite3_column_blob(stmt_, index));
  const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index));
  return data ? std::span<const std::byte>(data, size) : std::span<const std::byte>();
}

bool SqliteStatement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

Result<SqliteDb> SqliteDb::open(const std::string& path, Check check_level) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return fail("cannot open " + path + ": " + (raw ? sqlite3_errmsg(raw) : "out of memory"));
  // Another process (a second server, the cache command) may hold the lock
  // for a moment: wait rather than fail.
  sqlite3_busy_timeout(raw, kBackgroundWaitMs);
  // A file that is not a database, or a damaged one, is found here rather
  // than at the first query.
  if (check_level == Check::Full) {
    auto check = db.prepare("PRAGMA quick_check");
    if (!check) return std::unexpected(check.error());
    auto row = check->step();
    if (!row) return fail("cannot read " + path + ": " + row.error().message);
    if (!*row || check->column_text(0) != "ok") return fail(path + " is damaged: " + check->column_text(0));
  } else {
    auto schema = db.prepare("SELECT COUNT(*) FROM sqlite_master");
    if (!schema) return std::unexpected(schema.error());
    if (auto row = schema->step(); !row) return fail("cannot read " + path + ": " + row.error().message);
  }
  if (auto wal = db.exec("PRAGMA journal_mode=WAL"); !wal) return std::unexpected(wal.error());
  // NORMAL in WAL mode: a power loss may forget the last transactions, never
  // corrupt the database; what is forgotten is rebuilt from the files.
  if (auto sync = db.exec("PRAGMA synchronous=NORMAL"); !sync) return std::unexpected(sync.error());
  return db;
}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

SqliteDb::~SqliteDb() {
  if (db_) sqlite3_close_v2(db_);
}

Status SqliteDb::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    return fail("sqlite: " + text);
  }
  return {};
}

Result<SqliteStatement> SqliteDb::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK)
    return fail(std::string("sqlite: ") + sqlite3_errmsg(db_));
  return SqliteStatement(db_, stmt);
}

std::string SqliteDb::last_error() const { return sqlite3_errmsg(db_); }

void SqliteDb::set_lock_wait_ms(int ms) { sqlite3_busy_timeout(db_, ms); }

}  // namespace clm
