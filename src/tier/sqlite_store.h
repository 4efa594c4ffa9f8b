// SqliteStore: entries as blobs in one SQLite database (WAL), for small
// devices where a directory of files is unwelcome. Same encoding, same
// checks, same rules as DiskStore; a damaged entry is moved to the
// database's `quarantine` table, a damaged database is set aside
// (FILE.damaged-TIME) and started afresh: only cache is lost.
#pragma once

#include <memory>
#include <string>

#include "tier/entry_store.h"

namespace clm {

class SqliteStore final : public EntryStore {
 public:
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& file, DiskTierOptions options);

  std::string kind() const override { return "sqlite"; }
  std::size_t quarantine_size() override;

 private:
  SqliteStore(std::string file, DiskTierOptions options, SqliteDb db)
      : EntryStore(std::move(file), std::move(options), std::move(db)) {}

  Status init_quarantine();
  Status place_bytes(StoredEntry& row, std::span<const std::byte>) override {
    row.file.clear();
    return {};
  }
  Status commit_row(const StoredEntry& row, std::span<const std::byte> bytes) override;
  std::optional<std::vector<std::byte>> load_bytes(const StoredEntry& row) override;
  bool visit_bytes(const StoredEntry& row, const BytesVisitor& visit) override;
  void drop_bytes(const StoredEntry&) override {}  // the bytes go with the row
  void quarantine_bytes(const StoredEntry& row, const std::string& reason) override;
  uint64_t free_bytes() override;
};

}  // namespace clm
