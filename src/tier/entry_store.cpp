#include "tier/entry_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tier/entry_codec.h"

namespace clm {

namespace {

constexpr const char* kColumns = "key, parent, fingerprint, file, size, checksum, created, last_access, hits, ttl";

// The rows of key's subtree: key itself and, transitively, every row whose
// parent is in the subtree. Starts from the key even when its own row is gone,
// so that orphans of a vanished entry are found too.
constexpr const char* kSubtree =
    "WITH RECURSIVE sub(k) AS (VALUES(?1) UNION SELECT e.key FROM entries e JOIN sub ON e.parent = sub.k) ";

StoredEntry row_from(const SqliteStatement& s) {
  StoredEntry row;
  row.key = s.column_key(0);
  row.parent = s.column_key(1);
  row.fingerprint = s.column_key(2);
  row.file = s.column_text(3);
  row.size = static_cast<uint64_t>(s.column_int(4));
  row.checksum = s.column_key(5);
  row.created_ms = s.column_int(6);
  row.last_access_ms = s.column_int(7);
  row.hits = s.column_int(8);
  row.ttl_s = s.column_int(9);
  return row;
}

std::vector<StoredEntry> collect(Result<SqliteStatement> statement) {
  std::vector<StoredEntry> rows;
  if (!statement) return rows;
  for (;;) {
    auto more = statement->step();
    if (!more || !*more) break;
    rows.push_back(row_from(*statement));
  }
  return rows;
}

void log_error(const std::string& where, const std::string& message) {
  std::fprintf(stderr, "clmcache: %s: %s\n", where.c_str(), message.c_str());
}

}  // namespace

EntryStore::~EntryStore() {
  std::lock_guard lock(mu_);
  record_hits();
}

void EntryStore::record_hits() {
  if (pending_hits_.empty()) return;
  // A row removed meanwhile is simply not updated.
  Status done = db_.exec("BEGIN");
  if (done) {
    auto s = db_.prepare("UPDATE entries SET hits = hits + 1, last_access = MAX(last_access, ?2) WHERE key = ?1");
    if (!s) done = std::unexpected(s.error());
    for (const auto& [key, at] : pending_hits_) {
      if (!done) break;
      done = s->bind_key(1, key).bind(2, at).run();
    }
    if (done) done = db_.exec("COMMIT");
    else (void)db_.exec("ROLLBACK");
  }
  // Hits that could not be recorded (the store was locked) are kept for the
  // next try, up to a bound: they only order eviction.
  if (done || pending_hits_.size() > 16 * kHitBatch) pending_hits_.clear();
  if (!done) log_error(location_, done.error().message);
}

int64_t EntryStore::last_access_of(const StoredEntry& row) const {
  int64_t latest = row.last_access_ms;
  for (const auto& [key, at] : pending_hits_)
    if (key == row.key) latest = std::max(latest, at);
  return latest;
}

Status EntryStore::init_schema() {
  return db_.exec(
      "CREATE TABLE IF NOT EXISTS entries ("
      "  key INTEGER PRIMARY KEY, parent INTEGER NOT NULL, fingerprint INTEGER NOT NULL,"
      "  file TEXT, size INTEGER NOT NULL, checksum INTEGER NOT NULL, created INTEGER NOT NULL,"
      "  last_access INTEGER NOT NULL, hits INTEGER NOT NULL DEFAULT 0, ttl INTEGER NOT NULL, data BLOB);"
      "CREATE INDEX IF NOT EXISTS entries_parent ON entries(parent);"
      "CREATE INDEX IF NOT EXISTS entries_last_access ON entries(last_access);");
}

int64_t EntryStore::now_ms() const {
  if (options_.clock_ms) return options_.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status EntryStore::insert_row(const StoredEntry& row, std::optional<std::span<const std::byte>> blob) {
  auto s = db_.prepare(
      "INSERT OR REPLACE INTO entries (key, parent, fingerprint, file, size, checksum, created, last_access, hits,"
      " ttl, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  if (!s) return std::unexpected(s.error());
  s->bind_key(1, row.key).bind_key(2, row.parent).bind_key(3, row.fingerprint);
  if (row.file.empty()) s->bind_null(4); else s->bind(4, row.file);
  s->bind(5, static_cast<int64_t>(row.size)).bind_key(6, row.checksum).bind(7, row.created_ms);
  s->bind(8, row.last_access_ms).bind(9, row.hits).bind(10, row.ttl_s);
  if (blob) s->bind(11, *blob); else s->bind_null(11);
  return s->run();
}

std::optional<StoredEntry> EntryStore::find_row(BlockKey key) {
  auto s = db_.prepare(std::string("SELECT ") + kColumns + " FROM entries WHERE key = ?1");
  if (!s) return std::nullopt;
  s->bind_key(1, key);
  auto row = s->step();
  if (!row || !*row) return std::nullopt;
  return row_from(*s);
}

std::vector<StoredEntry> EntryStore::all_rows() {
  return collect(db_.prepare(std::string("SELECT ") + kColumns + " FROM entries ORDER BY created, key"));
}

std::size_t EntryStore::remove_subtree(BlockKey key, bool keep_root_bytes) {
  if (key == kNoKey) return 0;
  auto s = db_.prepare(std::string(kSubtree) + "SELECT " + kColumns + " FROM entries WHERE key IN sub");
  if (!s) return 0;
  s->bind_key(1, key);
  const std::vector<StoredEntry> rows = collect(std::move(s));
  // Bytes first, rows second: a crash in between leaves rows without bytes,
  // which the next start drops, never an index pointing at garbage.
  for (const StoredEntry& row : rows)
    if (!(keep_root_bytes && row.key == key)) drop_bytes(row);
  auto del = db_.prepare(std::string(kSubtree) + "DELETE FROM entries WHERE key IN sub");
  if (del) {
    del->bind_key(1, key);
    if (auto done = del->run(); !done) log_error(location_, done.error().message);
  }
  std::size_t dependents = 0;
  for (const StoredEntry& row : rows) dependents += row.key != key;
  if (removal_listener_ && !rows.empty()) {
    std::vector<BlockKey> keys;
    keys.reserve(rows.size());
    for (const StoredEntry& row : rows) keys.push_back(row.key);
    removal_listener_(keys);
  }
  counters_.dependents_removed += dependents;
  return rows.size();
}

void EntryStore::quarantine_locked(const StoredEntry& row, const std::string& reason) {
  quarantine_bytes(row, reason);
  ++counters_.quarantined;
  remove_subtree(row.key, /*keep_root_bytes=*/true);
}

uint64_t EntryStore::total_bytes() {
  auto s = db_.prepare("SELECT COALESCE(SUM(size), 0) FROM entries");
  if (!s) return 0;
  auto row = s->step();
  return row && *row ? static_cast<uint64_t>(s->column_int(0)) : 0;
}

void EntryStore::make_room(uint64_t incoming) {
  if (options_.max_bytes == 0) return;
  record_hits();  // least recently used by the latest reads
  while (total_bytes() + incoming > options_.max_bytes) {
    BlockKey victim = kNoKey;
    {
      auto s = db_.prepare("SELECT key FROM entries ORDER BY last_access, created LIMIT 1");
      if (!s) return;
      auto row = s->step();
      if (!row || !*row) return;
      victim = s->column_key(0);
    }
    if (remove_subtree(victim, false) == 0) return;
    ++counters_.evicted;
  }
}

std::size_t EntryStore::gc_locked() {
  record_hits();
  auto s = db_.prepare("SELECT key FROM entries WHERE last_access + ttl * 1000 < ?1 ORDER BY last_access");
  std::vector<BlockKey> expired;
  if (s) {
    s->bind(1, now_ms());
    for (;;) {
      auto more = s->step();
      if (!more || !*more) break;
      expired.push_back(s->column_key(0));
    }
  }
  const uint64_t before = counters_.evicted + counters_.dependents_removed;
  for (BlockKey key : expired) {
    // An earlier subtree may already have taken it.
    if (!find_row(key)) continue;
    remove_subtree(key, false);
    ++counters_.evicted;
  }
  make_room(0);
  return static_cast<std::size_t>(counters_.evicted + counters_.dependents_removed - before);
}

void EntryStore::drop_orphans() {
  for (;;) {
    std::vector<BlockKey> orphans;
    {
      auto s = db_.prepare(
          "SELECT key FROM entries e WHERE parent != 0 AND NOT EXISTS (SELECT 1 FROM entries p WHERE p.key = e.parent)");
      if (!s) return;
      for (;;) {
        auto more = s->step();
        if (!more || !*more) break;
        orphans.push_back(s->column_key(0));
      }
    }
    if (orphans.empty()) return;
    for (BlockKey key : orphans) counters_.dependents_removed += remove_subtree(key, false) > 0;
  }
}

std::size_t EntryStore::count_present(std::span<const BlockKey> chain, uint64_t fingerprint) {
  std::lock_guard lock(mu_);
  RequestPathWait short_wait(db_);
  record_hits();  // the previous lookup's, in one transaction; and the TTL check below sees them
  auto s = db_.prepare("SELECT 1 FROM entries WHERE key = ?1 AND fingerprint = ?2 AND last_access + ttl * 1000 >= ?3");
  if (!s) return 0;
  const int64_t now = now_ms();
  std::size_t present = 0;
  for (BlockKey key : chain) {
    auto found = s->bind_key(1, key).bind_key(2, fingerprint).bind(3, now).step();
    if (!found || !*found) break;
    ++present;
    s->reset();
  }
  return present;
}

bool EntryStore::read(BlockKey key, uint64_t fingerprint, const BytesVisitor& visit) {
  StoredEntry row;
  {
    std::lock_guard lock(mu_);
    RequestPathWait short_wait(db_);
    const std::optional<StoredEntry> found = find_row(key);
    if (!found || found->fingerprint != fingerprint || last_access_of(*found) + found->ttl_s * 1000 < now_ms())
      return false;
    row = *found;
  }
  const bool present = visit_bytes(row, visit);
  std::lock_guard lock(mu_);
  RequestPathWait short_wait(db_);
  if (!present) {
    // The row outlived its bytes (removed by hand, another process): the
    // entry and what depends on it are gone. Unless the entry was removed
    // and written anew meanwhile.
    const std::optional<StoredEntry> still = find_row(key);
    if (still && still->created_ms == row.created_ms) remove_subtree(key, false);
    return false;
  }
  pending_hits_.emplace_back(key, now_ms());
  if (pending_hits_.size() >= kHitBatch) record_hits();
  return true;
}

bool EntryStore::write(const TierEntry& entry) {
  const std::vector<std::byte> bytes = encode_entry(entry);
  {
    std::lock_guard lock(mu_);
    if (const auto existing = find_row(entry.key); existing && existing->fingerprint == entry.model_fingerprint)
      return true;  // keys name their content: it is stored already
    if (options_.max_bytes != 0 && bytes.size() > options_.max_bytes) {
      ++counters_.writes_refused_cap;
      return false;
    }
    if (free_bytes() < bytes.size() + options_.min_free_bytes) {
      ++counters_.writes_refused_space;
      return false;
    }
    // Writers running at the same time each make room for their own entry:
    // the cap may be exceeded by the entries in flight, never more.
    make_room(bytes.size());
  }
  const int64_t now = now_ms();
  StoredEntry row;
  row.key = entry.key;
  row.parent = entry.parent;
  row.fingerprint = entry.model_fingerprint;
  row.size = bytes.size();
  row.checksum = entry_checksum(entry);
  row.created_ms = now;
  row.last_access_ms = now;
  row.ttl_s = options_.ttl_s;
  Status stored = place_bytes(row, bytes);
  std::lock_guard lock(mu_);
  // Checked once the bytes are in place, under the lock that commits the
  // row: a parent evicted or quarantined while they were written takes the
  // child's write with it.
  if (stored && entry.parent != kNoKey && !find_row(entry.parent)) {
    drop_bytes(row);
    ++counters_.writes_refused_orphan;
    return false;
  }
  if (stored) stored = commit_row(row, bytes);
  if (!stored) {
    log_error(location_, stored.error().message);
    return false;
  }
  ++counters_.writes;
  return true;
}

void EntryStore::quarantine(BlockKey key, const std::string& reason) {
  std::lock_guard lock(mu_);
  if (const auto row = find_row(key)) quarantine_locked(*row, reason);
}

std::size_t EntryStore::remove(BlockKey key) {
  std::lock_guard lock(mu_);
  return remove_subtree(key, false);
}

std::vector<StoredEntry> EntryStore::list(std::optional<BlockKey> root) {
  std::lock_guard lock(mu_);
  record_hits();
  if (!root) return all_rows();
  auto s = db_.prepare(std::string(kSubtree) + "SELECT " + kColumns + " FROM entries WHERE key IN sub ORDER BY created, key");
  if (!s) return {};
  s->bind_key(1, *root);
  return collect(std::move(s));
}

VerifyReport EntryStore::verify(std::optional<BlockKey> root) {
  std::lock_guard lock(mu_);
  VerifyReport report;
  for (const StoredEntry& listed : list(root)) {
    const std::optional<StoredEntry> row = find_row(listed.key);
    if (!row) continue;  // went with a damaged parent
    ++report.checked;
    const std::optional<std::vector<std::byte>> bytes = load_bytes(*row);
    std::string reason;
    if (!bytes) {
      reason = "its bytes are missing";
    } else if (auto entry = decode_entry(*bytes); !entry) {
      reason = entry.error().message;
    } else if (entry->key != row->key || entry->model_fingerprint != row->fingerprint) {
      reason = "it holds another entry than its index row says";
    }
    if (reason.empty()) continue;
    quarantine_locked(*row, reason);
    ++report.quarantined;
  }
  return report;
}

std::size_t EntryStore::gc() {
  std::lock_guard lock(mu_);
  return gc_locked();
}

std::size_t EntryStore::set_max_bytes(uint64_t max_bytes) {
  std::lock_guard lock(mu_);
  options_.max_bytes = max_bytes;
  return gc_locked();
}

std::size_t EntryStore::clear(std::optional<BlockKey> root) {
  std::lock_guard lock(mu_);
  if (root) return remove_subtree(*root, false);
  const std::vector<StoredEntry> rows = all_rows();
  for (const StoredEntry& row : rows) drop_bytes(row);
  if (auto done = db_.exec("DELETE FROM entries"); !done) log_error(location_, done.error().message);
  return rows.size();
}

uint64_t EntryStore::stored_bytes() {
  std::lock_guard lock(mu_);
  RequestPathWait short_wait(db_);
  return total_bytes();
}

StoreCounters EntryStore::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace clm
