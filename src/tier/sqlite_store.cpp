#include "tier/sqlite_store.h"

#include "tier/entry_codec.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>

namespace clm {

namespace fs = std::filesystem;

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& file, DiskTierOptions options) {
  if (file.empty()) return fail("sqlite: the database file name is empty");
  const fs::path parent = fs::path(file).parent_path();
  std::error_code ec;
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) return fail("cannot create " + parent.string() + ": " + ec.message());
  }
  std::unique_ptr<SqliteStore> store;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string problem;
    // The entries are checked one by one when read (checksums); reading
    // every page of a large store at each start would only delay it.
    if (auto db = SqliteDb::open(file, SqliteDb::Check::Header)) {
      std::unique_ptr<SqliteStore> opened(new SqliteStore(file, options, std::move(*db)));
      auto schema = opened->init_schema();
      if (schema) schema = opened->init_quarantine();
      if (schema) {
        store = std::move(opened);
        break;
      }
      problem = schema.error().message;
    } else {
      problem = db.error().message;
    }
    if (attempt == 1) return fail("cannot open the cache database " + file + ": " + problem);
    std::fprintf(stderr, "clmcache: sqlite cache %s: the database is unusable (%s); starting afresh\n", file.c_str(),
                 problem.c_str());
    const std::string aside = file + ".damaged-" + std::to_string(::time(nullptr));
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string from = file + suffix;
      if (::rename(from.c_str(), (aside + suffix).c_str()) != 0 && errno != ENOENT)
        return fail("cannot set aside the damaged database " + from);
    }
  }
  // The cache holds users' conversations: owner only.
  ::chmod(file.c_str(), 0600);
  std::lock_guard lock(store->mu_);
  if (auto s = store->db_.prepare("SELECT key FROM entries WHERE data IS NULL")) {
    std::vector<BlockKey> empty;
    for (;;) {
      auto more = s->step();
      if (!more || !*more) break;
      empty.push_back(s->column_key(0));
    }
    for (BlockKey key : empty) store->remove_subtree(key, false);
  }
  store->drop_orphans();
  store->gc_locked();
  return store;
}

Status SqliteStore::init_quarantine() {
  return db_.exec(
      "CREATE TABLE IF NOT EXISTS quarantine (key INTEGER NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL,"
      " data BLOB)");
}

Status SqliteStore::commit_row(const StoredEntry& row, std::span<const std::byte> bytes) {
  // One transaction: the row and its bytes appear together or not at all.
  return insert_row(row, bytes);
}

std::optional<std::vector<std::byte>> SqliteStore::load_bytes(const StoredEntry& row) {
  auto s = db_.prepare("SELECT data FROM entries WHERE key = ?1");
  if (!s) return std::nullopt;
  s->bind_key(1, row.key);
  auto found = s->step();
  if (!found || !*found || s->column_is_null(0)) return std::nullopt;
  return s->column_blob(0);
}

bool SqliteStore::visit_bytes(const StoredEntry& row, const BytesVisitor& visit) {
  auto s = db_.prepare("SELECT data FROM entries WHERE key = ?1");
  if (!s) return false;
  s->bind_key(1, row.key);
  auto found = s->step();
  if (!found || !*found || s->column_is_null(0)) return false;
  // The blob is read where SQLite holds it, valid until the statement moves
  // on: its K/V is copied once, into its destination.
  const std::span<const std::byte> blob = s->column_blob_view(0);
  visit(blob.size(), memory_reader(blob));
  return true;
}

void SqliteStore::quarantine_bytes(const StoredEntry& row, const std::string& reason) {
  if (auto s = db_.prepare("INSERT INTO quarantine (key, reason, at, data) SELECT key, ?2, ?3, data FROM entries "
                           "WHERE key = ?1")) {
    if (auto done = s->bind_key(1, row.key).bind(2, reason).bind(3, now_ms()).run(); !done)
      std::fprintf(stderr, "clmcache: sqlite cache %s: %s\n", location_.c_str(), done.error().message.c_str());
  }
  std::fprintf(stderr, "clmcache: sqlite cache %s: quarantined entry %016llx: %s\n", location_.c_str(),
               static_cast<unsigned long long>(row.key), reason.c_str());
}

std::size_t SqliteStore::quarantine_size() {
  std::lock_guard lock(mu_);
  auto s = db_.prepare("SELECT COUNT(*) FROM quarantine");
  if (!s) return 0;
  auto row = s->step();
  return row && *row ? static_cast<std::size_t>(s->column_int(0)) : 0;
}

uint64_t SqliteStore::free_bytes() {
  std::error_code ec;
  const std::string dir = fs::absolute(location_, ec).parent_path().string();
  struct statvfs fs_info{};
  if (::statvfs(dir.c_str(), &fs_info) != 0) return 0;
  return static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
}

}  // namespace clm
