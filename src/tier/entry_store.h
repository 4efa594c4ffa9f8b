// EntryStore: the model-independent half of a persistent tier (DESIGN.md
// "Tiers and persistence"). It keeps encoded entries (entry_codec.h) and an
// SQLite index of them, and owns the rules every persistent store shares:
// free space and the size cap checked before every write, time to live,
// least-recently-used eviction, quarantine of damaged entries, and removal
// of every entry whose chain depends on a removed one (the `parent` column).
// Where the bytes live is left to the subclass: one file per entry
// (DiskStore) or a blob in the index database itself (SqliteStore).
// All calls are thread-safe: the index is guarded by one mutex, which is
// released while an entry's bytes are written or read.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cache/tier_entry.h"
#include "tier/entry_codec.h"
#include "tier/sqlite_db.h"
#include "util/error.h"

namespace clm {

struct DiskTierOptions {
  uint64_t max_bytes = 0;                         // size cap of the stored entries; 0 = none
  uint64_t min_free_bytes = 5ull << 30;           // a write never leaves less free on the filesystem
  int64_t ttl_s = 7 * 24 * 3600;                  // an entry not read for this long expires
  std::function<int64_t()> clock_ms;              // milliseconds since the epoch; empty = the system clock
};

// One row of the index, as `cache ls` shows it.
struct StoredEntry {
  BlockKey key = kNoKey;
  BlockKey parent = kNoKey;
  uint64_t fingerprint = 0;
  std::string file;  // the entry's file name in the directory; empty for blobs
  uint64_t size = 0;
  uint64_t checksum = 0;
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  int64_t hits = 0;
  int64_t ttl_s = 0;
};

struct StoreCounters {
  uint64_t writes = 0;
  uint64_t writes_refused_space = 0;  // the free-space floor would have been crossed
  uint64_t writes_refused_cap = 0;    // the entry alone is larger than the size cap
  uint64_t writes_refused_orphan = 0; // the entry's parent is not stored (never was, or went meanwhile)
  uint64_t evicted = 0;               // removed by the size cap or the time to live
  uint64_t quarantined = 0;
  uint64_t dependents_removed = 0;    // removed because an entry they depend on went
};

// Sees a stored entry's bytes: their size and a reader over them.
using BytesVisitor = std::function<void(uint64_t size, const EntryReader& read)>;

struct VerifyReport {
  std::size_t checked = 0;
  std::size_t quarantined = 0;
};

class EntryStore {
 public:
  virtual ~EntryStore();  // records the hits not yet written
  EntryStore(const EntryStore&) = delete;
  EntryStore& operator=(const EntryStore&) = delete;

  // "disk" or "sqlite".
  virtual std::string kind() const = 0;
  // Where the store is: its directory or database file.
  const std::string& location() const { return location_; }

  // How many keys at the start of chain are present, unexpired and of this
  // model.
  std::size_t count_present(std::span<const BlockKey> chain, uint64_t fingerprint);
  // Shows visit the stored bytes of key (their size and a reader; valid
  // during the call only) when its row belongs to this model and has not
  // expired, and counts a hit; false when absent. Unchecked: the visitor
  // decodes and checks them, reading the K/V straight where it is used.
  // A hit's last access (its TTL and LRU position) and hit count are kept
  // in memory and written to the index in batches: one transaction for the
  // hits of a whole chain, at the next lookup, collection, eviction or
  // listing, rather than one per block read.
  bool read(BlockKey key, uint64_t fingerprint, const BytesVisitor& visit);
  // Encodes and stores entry. False when refused: the free-space floor, or
  // the entry is larger than the size cap (older entries are evicted, least
  // recently used first, to make room under the cap), or its parent is not
  // stored (a child is only reachable through its parent: stored alone it
  // would be dead weight, and the dependency graph would have a hole), or an
  // I/O error.
  bool write(const TierEntry& entry);
  // Moves key's bytes aside (logged once, with reason) and removes every
  // entry that depends on it.
  void quarantine(BlockKey key, const std::string& reason);
  // Removes key and every entry that depends on it; returns how many went.
  std::size_t remove(BlockKey key);

  // Administration (`clmcache cache`). root: only that entry and the entries
  // that depend on it.
  std::vector<StoredEntry> list(std::optional<BlockKey> root = std::nullopt);
  // Decodes every entry (of root's subtree) and quarantines the bad ones.
  VerifyReport verify(std::optional<BlockKey> root = std::nullopt);
  // Drops expired entries, then evicts until the size cap holds; returns how
  // many entries went.
  std::size_t gc();
  // Changes the size cap (0: none), then evicts as gc() does until it
  // holds; returns how many entries went.
  std::size_t set_max_bytes(uint64_t max_bytes);
  // Removes every entry (or root's subtree); returns how many went.
  std::size_t clear(std::optional<BlockKey> root = std::nullopt);
  // Told the keys of every entry removed from now on, for whatever reason
  // (the mutex held). Set before the store is shared between threads.
  void set_removal_listener(std::function<void(std::span<const BlockKey>)> listener) {
    removal_listener_ = std::move(listener);
  }

  // How many damaged entries lie in quarantine.
  virtual std::size_t quarantine_size() = 0;
  // Bytes of the stored entries (what the size cap counts).
  uint64_t stored_bytes();

  StoreCounters counters() const;
  const DiskTierOptions& options() const { return options_; }

 protected:
  EntryStore(std::string location, DiskTierOptions options, SqliteDb db)
      : location_(std::move(location)), options_(std::move(options)), db_(std::move(db)) {}

  // Creates the index table when missing; then the store is usable.
  Status init_schema();
  int64_t now_ms() const;

  // Subclass hooks. The two that move an entry's bytes run without the
  // mutex, so that a slow write (fsync) does not hold up reads; the others
  // run with it held.
  // Puts the bytes where they live (the disk store writes the file durably
  // and sets row.file); then commit_row indexes them.
  virtual Status place_bytes(StoredEntry& row, std::span<const std::byte> bytes) = 0;
  virtual std::optional<std::vector<std::byte>> load_bytes(const StoredEntry& row) = 0;
  // Shows visit the bytes without copying them first (the disk store reads
  // them from the open file, the SQLite store from the blob in place); false
  // when they are missing.
  virtual bool visit_bytes(const StoredEntry& row, const BytesVisitor& visit) = 0;
  virtual Status commit_row(const StoredEntry& row, std::span<const std::byte> bytes) = 0;
  virtual void drop_bytes(const StoredEntry& row) = 0;
  virtual void quarantine_bytes(const StoredEntry& row, const std::string& reason) = 0;
  // Bytes free for an unprivileged writer on the store's filesystem.
  virtual uint64_t free_bytes() = 0;

  // Helpers for subclasses (mutex held).
  Status insert_row(const StoredEntry& row, std::optional<std::span<const std::byte>> blob);
  std::optional<StoredEntry> find_row(BlockKey key);
  std::vector<StoredEntry> all_rows();
  // Removes key's subtree: rows and bytes. The entry itself is counted by
  // the caller; its dependents in counters_.dependents_removed.
  std::size_t remove_subtree(BlockKey key, bool keep_root_bytes);
  void quarantine_locked(const StoredEntry& row, const std::string& reason);
  std::size_t gc_locked();
  // Removes entries whose parent is not stored: reuse must never attach a
  // child whose parent is gone.
  void drop_orphans();
  // Evicts least recently used entries until `incoming` more bytes fit
  // under the cap.
  void make_room(uint64_t incoming);
  uint64_t total_bytes();
  // Writes the hits recorded since the last call in one transaction.
  void record_hits();
  // The latest last access of key: its row's, or a hit not yet recorded.
  int64_t last_access_of(const StoredEntry& row) const;

  std::string location_;
  DiskTierOptions options_;
  SqliteDb db_;
  mutable std::recursive_mutex mu_;
  StoreCounters counters_;
  std::function<void(std::span<const BlockKey>)> removal_listener_;
  // Hits not yet written to the index: (key, when), oldest first.
  std::vector<std::pair<BlockKey, int64_t>> pending_hits_;
  static constexpr std::size_t kHitBatch = 256;
};

}  // namespace clm
