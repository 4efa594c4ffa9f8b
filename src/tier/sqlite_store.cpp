#include "tier/sqlite_store.h"

#include "tier/entry_codec.h"
#include "tier/errno_text.h"
#include "tier/free_space.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace clm {

namespace fs = std::filesystem;

namespace {

// PRAGMA application_id of the databases this store makes ("clmc").
constexpr uint32_t kApplicationId = 0x636c6d63;

enum class Ownership { New, Ours, Unmarked };

// Whether `file` may become (or is) the store, read from its first bytes
// without opening it as a database: a database is changed by being opened
// (WAL mode), so one that is not ours must not be.
Result<Ownership> ownership_of(const std::string& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ownership::New;
    return fail(errno_text("sqlite cache " + file));
  }
  const std::string left = "; it is left as it is: name a new file or a store clmcache made";
  if (S_ISLNK(st.st_mode)) return fail(file + " is a symbolic link" + left);
  if (!S_ISREG(st.st_mode)) return fail(file + " is not a regular file" + left);
  if (st.st_size == 0) return Ownership::New;
  unsigned char header[100] = {};
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fail(errno_text("sqlite cache " + file));
  const ssize_t got = ::pread(fd, header, sizeof header, 0);
  ::close(fd);
  static constexpr char kMagic[] = "SQLite format 3";  // and its NUL: 16 bytes
  if (got != static_cast<ssize_t>(sizeof header) || std::memcmp(header, kMagic, sizeof kMagic) != 0)
    return fail(file + " is not an SQLite database" + left);
  const uint32_t id = (uint32_t{header[68]} << 24) | (uint32_t{header[69]} << 16) | (uint32_t{header[70]} << 8) |
                      uint32_t{header[71]};
  if (id == kApplicationId) return Ownership::Ours;
  if (id != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", id);
    return fail(file + " is an SQLite database of another program (application_id 0x" + hex + ")" + left);
  }
  return Ownership::Unmarked;
}

// An unmarked database is adopted only if it holds no table but this
// store's (one made before the mark was set, or an empty one); read-only.
Status check_unmarked(const std::string& file) {
  sqlite3* db = nullptr;
  std::vector<std::string> foreign;
  // immutable: no lock taken and no -wal or -shm file made beside it.
  std::string uri = "file:";
  for (char c : file) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  uri += "?immutable=1";
  bool readable = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) == SQLITE_OK;
  sqlite3_stmt* s = nullptr;
  readable = readable && sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &s,
                                            nullptr) == SQLITE_OK;
  while (readable) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      readable = false;
      break;
    }
    const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    if (name != "entries" && name != "quarantine") foreign.push_back(name);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  const std::string left = "; it is left as it is: name a new file or a store clmcache made";
  if (!readable) return fail(file + " is an SQLite database clmcache cannot read and did not mark" + left);
  if (!foreign.empty()) return fail(file + " is an SQLite database of another program (table " + foreign[0] + ")" + left);
  return {};
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& file, DiskTierOptions options) {
  if (file.empty()) return fail("sqlite: the database file name is empty");
  auto owner = ownership_of(file);
  if (!owner) return std::unexpected(owner.error());
  if (*owner == Ownership::Unmarked) {
    if (auto checked = check_unmarked(file); !checked) return std::unexpected(checked.error());
  }
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
      if (schema) schema = opened->db_.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
      if (schema) {
        store = std::move(opened);
        break;
      }
      problem = schema.error().message;
    } else {
      problem = db.error().message;
    }
    // One that cannot be opened for want of space is not damaged: it stays
    // as it is for the next start, and the server runs without it.
    if (free_space_is_low(parent)) return store_unavailable_for_space("the cache database " + file, problem);
    if (attempt == 1) return fail("cannot open the cache database " + file + ": " + problem);
    // Only a store of ours is set aside: anything else was refused above.
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
  RequestPathWait short_wait(db_);
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
