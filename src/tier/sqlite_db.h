// SqliteDb: the few things the tiers need from SQLite, as RAII values with
// Result errors: open a database in WAL mode, run statements, step through
// rows. Keys are 64-bit unsigned values stored bit for bit in SQLite's
// signed INTEGER.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace clm {

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  ~SqliteStatement();

  // Parameters are numbered from 1, as in SQL's ?1, ?2...
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind_key(int index, uint64_t key) { return bind(index, static_cast<int64_t>(key)); }
  SqliteStatement& bind(int index, const std::string& text);
  SqliteStatement& bind(int index, std::span<const std::byte> blob);
  SqliteStatement& bind_null(int index);

  // True when a row is ready; false when done; an error on failure.
  Result<bool> step();
  // Runs to completion (a statement without rows).
  Status run();
  // Makes the statement ready to run again with new bindings.
  void reset();

  int64_t column_int(int index) const;
  uint64_t column_key(int index) const { return static_cast<uint64_t>(column_int(index)); }
  std::string column_text(int index) const;
  std::vector<std::byte> column_blob(int index) const;
  // The blob where SQLite holds it: valid until the next step, reset or
  // column call on this statement.
  std::span<const std::byte> column_blob_view(int index) const;
  bool column_is_null(int index) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class SqliteDb {
 public:
  // How much of an existing database open() reads to find damage.
  enum class Check { Header, Full };
  // Opens (creating) the database at path in WAL mode and checks it: its
  // header and schema, or every page (Full; time grows with the size); a
  // damaged file is an error.
  static Result<SqliteDb> open(const std::string& path, Check check = Check::Full);

  SqliteDb(SqliteDb&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  ~SqliteDb();

  Status exec(const std::string& sql);
  Result<SqliteStatement> prepare(const std::string& sql);
  std::string last_error() const;

  // How long a statement waits for a lock another process holds before it
  // fails as busy (5 s from open).
  static constexpr int kBackgroundWaitMs = 5000;
  void set_lock_wait_ms(int ms);

 private:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// While alive, statements on db give up on another process's lock almost at
// once: the calls a request waits for (lookups, /stats) treat a locked
// store as a miss rather than wait seconds for it. The wait is the
// connection's: hold the lock that every writer of db holds while one lives.
class RequestPathWait {
 public:
  explicit RequestPathWait(SqliteDb& db) : db_(db) { db_.set_lock_wait_ms(kWaitMs); }
  ~RequestPathWait() { db_.set_lock_wait_ms(SqliteDb::kBackgroundWaitMs); }
  RequestPathWait(const RequestPathWait&) = delete;
  RequestPathWait& operator=(const RequestPathWait&) = delete;

 private:
  static constexpr int kWaitMs = 20;
  SqliteDb& db_;
};

}  // namespace clm
