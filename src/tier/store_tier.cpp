#include "tier/store_tier.h"

#include "tier/entry_codec.h"

namespace clm {

std::size_t StoreTier::exists(std::span<const BlockKey> chain) { return store_->count_present(chain, fingerprint_); }

std::optional<TierEntry> StoreTier::get(BlockKey key) {
  std::optional<std::vector<std::byte>> bytes = store_->read(key, fingerprint_);
  if (!bytes) {
    ++misses_;
    return std::nullopt;
  }
  Result<TierEntry> entry = decode_entry(*bytes);
  if (!entry) {
    store_->quarantine(key, entry.error().message);
    ++misses_;
    return std::nullopt;
  }
  if (const char* defect = entry_defect(*entry, fingerprint_, key, geometry_)) {
    // Bytes of another model or key under this model's key are damage (or
    // tampering). Another KV geometry of the same model is a legitimate
    // entry of a server run with other settings: a miss, kept.
    const bool foreign = entry->model_fingerprint != fingerprint_ || entry->key != key;
    if (foreign) store_->quarantine(key, defect);
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return std::move(*entry);
}

bool StoreTier::put(const TierEntry& entry) {
  if (entry_defect(entry, fingerprint_, entry.key, geometry_) != nullptr || entry.key == kNoKey) return false;
  return store_->write(entry);
}

void StoreTier::remove(BlockKey key) { store_->remove(key); }

}  // namespace clm
