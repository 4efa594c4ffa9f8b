#include "tier/store_tier.h"

#include "tier/entry_codec.h"

namespace clm {

std::size_t StoreTier::exists(std::span<const BlockKey> chain) { return store_->count_present(chain, fingerprint_); }

std::optional<TierEntry> StoreTier::get_into(BlockKey key, std::span<std::byte> kv) {
  std::optional<TierEntry> out;
  std::string damage;  // why the stored bytes are unusable, when they are damaged
  const bool present = store_->read(key, fingerprint_, [&](uint64_t size, const EntryReader& read) {
    Result<EntryHeader> header = read_entry_header(size, read);
    if (!header) {
      damage = header.error().message;
      return;
    }
    // Checked before a byte of K/V is read. Bytes of another model or key
    // under this model's key are damage (or tampering). Another KV geometry
    // of the same model is a legitimate entry of a server run with other
    // settings: a miss, kept.
    if (const char* defect = header_defect(header->entry, fingerprint_, key, geometry_)) {
      if (header->entry.model_fingerprint != fingerprint_ || header->entry.key != key) damage = defect;
      return;
    }
    if (kv.size() != geometry_.block_bytes()) return;  // a caller's mistake, not the entry's
    if (Status done = read_entry_kv(*header, read, kv); !done) {
      damage = done.error().message;
      return;
    }
    out = std::move(header->entry);
  });
  if (present && !damage.empty()) store_->quarantine(key, damage);
  ++(out ? hits_ : misses_);
  return out;
}

bool StoreTier::put(const TierEntry& entry) {
  if (entry_defect(entry, fingerprint_, entry.key, geometry_) != nullptr || entry.key == kNoKey) return false;
  return store_->write(entry);
}

void StoreTier::remove(BlockKey key) { store_->remove(key); }

}  // namespace clm
