// DiskStore: entries as one safetensors file each in a directory, indexed
// by `index.sqlite` in the same directory. A directory is adopted as a store
// only if it is new (created with mode 0700), empty, or marked as one (the
// file `.clmcache-disk-cache`, or an index left by an earlier version); an
// existing directory's mode is left as it is. A file's name is
// its key in hex and nothing else: no path is ever built from request data.
// Writes are crash-safe: a temporary file is written and fsynced, renamed
// into place, the directory fsynced, and only then is the index row added.
// Opening reconciles the index with the files (see open()).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "tier/entry_store.h"
#include "tier/quarantine_dir.h"

namespace clm {

class DiskStore final : public EntryStore {
 public:
  // Opens dir, creating it. Recovers from whatever a crash or a person left:
  // leftover temporary files of dead writers are deleted; an index row
  // without its file is dropped; a file without a row is verified and
  // indexed (or quarantined); a lost or damaged index is rebuilt from the
  // files; expired entries are collected.
  static Result<std::unique_ptr<DiskStore>> open(const std::string& dir, DiskTierOptions options);

  std::string kind() const override { return "disk"; }
  std::size_t quarantine_size() override;

  static std::string file_name(BlockKey key);

 private:
  DiskStore(std::string dir, DiskTierOptions options, SqliteDb db)
      : EntryStore(std::move(dir), std::move(options), std::move(db)) {}

  Status place_bytes(StoredEntry& row, std::span<const std::byte> bytes) override;
  std::optional<std::vector<std::byte>> load_bytes(const StoredEntry& row) override;
  bool visit_bytes(const StoredEntry& row, const BytesVisitor& visit) override;
  Status commit_row(const StoredEntry& row, std::span<const std::byte>) override {
    return insert_row(row, std::nullopt);
  }
  void drop_bytes(const StoredEntry& row) override;
  void quarantine_bytes(const StoredEntry& row, const std::string& reason) override;
  uint64_t free_bytes() override;

  void reconcile();
  void quarantine_file(const std::string& name, const std::string& reason);
  std::string path(const std::string& name) const { return location_ + "/" + name; }

  std::atomic<uint64_t> temp_counter_{0};
  std::unique_ptr<QuarantineDir> quarantine_;
};

}  // namespace clm
