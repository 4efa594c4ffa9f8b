#include "tier/tier_set.h"

#include "tier/tier_health.h"
#include "tier/tier_usage.h"

namespace clm {

TierSet::TierSet(std::vector<std::unique_ptr<CacheTier>> tiers, uint64_t model_fingerprint, const KvGeometry& geometry,
                 std::size_t write_queue_bytes, KvEventSink* events)
    : tiers_(std::move(tiers)),
      fingerprint_(model_fingerprint),
      geometry_(geometry),
      hits_(tiers_.size(), 0),
      misses_(tiers_.size(), 0) {
  std::vector<CacheTier*> raw;
  for (auto& t : tiers_) {
    raw.push_back(t.get());
    if (events)
      t->set_removal_listener([events, medium = t->name()](std::span<const BlockKey> keys) {
        events->publish(removed_event(medium, {keys.begin(), keys.end()}));
      });
  }
  writer_ = std::make_unique<TierWriter>(std::move(raw), write_queue_bytes, events);
}

TierSet::~TierSet() { writer_.reset(); }

std::vector<LandedEntry> TierSet::fetch(std::span<const BlockKey> chain, KvLandingSource* landing) {
  std::vector<LandedEntry> out;
  std::size_t pos = 0;
  {
    std::lock_guard lock(mu_);
    while (pos < chain.size() && resident_.count(chain[pos]) != 0) ++pos;
  }
  std::vector<uint64_t> hits(tiers_.size(), 0), misses(tiers_.size(), 0);
  while (pos < chain.size()) {
    bool advanced = false;
    for (std::size_t t = 0; t < tiers_.size() && !advanced; ++t) {
      CacheTier& tier = *tiers_[t];
      const std::size_t present = tier.exists(chain.subspan(pos));
      if (landing && present > 0) landing->reserve(present);
      std::size_t got = 0;
      while (got < present) {
        const std::size_t at = pos + got;
        const std::optional<KvLanding> room = landing ? landing->take() : std::nullopt;
        LandedEntry e;
        if (room) {
          std::optional<TierEntry> read = tier.get_into(chain[at], room->kv);
          if (read) static_cast<TierEntry&>(e) = std::move(*read);
          e.block = read ? room->block : kNoBlock;
        } else if (std::optional<TierEntry> read = tier.get(chain[at])) {
          static_cast<TierEntry&>(e) = std::move(*read);
        }
        // The chain must hold together: a child is used only after its parent.
        const bool usable = e.key == chain[at] && e.parent == (at == 0 ? kNoKey : chain[at - 1]);
        if (!usable) {
          if (room) landing->give_back(room->block);
          break;
        }
        // Found below a faster tier: copy it up, so that the faster tier
        // holds the chain next time (the writer keeps chain order, parents
        // first). A full queue drops the copy like any write.
        if (t > 0) {
          TierEntry copy = e;
          if (room) copy.kv.assign(room->kv.begin(), room->kv.end());
          if (writer_->enqueue(std::move(copy), t)) ++copies_to_faster_;
        }
        out.push_back(std::move(e));
        ++got;
      }
      hits[t] += got;
      if (got < present || present == 0) ++misses[t];
      if (got > 0) {
        pos += got;
        advanced = true;
      }
    }
    if (!advanced) break;
  }
  std::lock_guard lock(mu_);
  for (std::size_t t = 0; t < tiers_.size(); ++t) {
    hits_[t] += hits[t];
    misses_[t] += misses[t];
  }
  return out;
}

void TierSet::block_computed(const CachedBlockView& block) {
  if (!writer_->has_room(block.kv.size(), block.tokens.size())) {
    writer_->count_dropped();
    return;
  }
  TierEntry e;
  e.model_fingerprint = fingerprint_;
  e.key = block.key;
  e.parent = block.parent;
  e.tokens.assign(block.tokens.begin(), block.tokens.end());
  e.positions.assign(block.positions.begin(), block.positions.end());
  e.geometry = geometry_;
  e.kv.assign(block.kv.begin(), block.kv.end());
  writer_->enqueue(std::move(e));
}

void TierSet::block_resident(BlockKey key) {
  std::lock_guard lock(mu_);
  resident_.insert(key);
}

void TierSet::block_gone(BlockKey key) {
  std::lock_guard lock(mu_);
  resident_.erase(key);
}

std::size_t TierSet::set_storage_cap(uint64_t max_bytes) {
  std::size_t changed = 0;
  for (auto& tier : tiers_)
    if (auto* u = dynamic_cast<TierUsage*>(tier.get())) {
      u->set_size_cap(max_bytes);
      ++changed;
    }
  return changed;
}

TierStats TierSet::stats() const {
  TierStats s;
  const std::vector<TierWriteCounts> writes = writer_->counts();
  // Asked before taking mu_: they query the index and list the quarantine,
  // and the scheduler's thread takes mu_ (block_resident) and must not wait.
  struct Usage {
    bool held = false;
    uint64_t bytes = 0, quarantined = 0;
  };
  std::vector<Usage> usage(tiers_.size());
  for (std::size_t t = 0; t < tiers_.size(); ++t)
    if (auto* u = dynamic_cast<TierUsage*>(tiers_[t].get()))
      usage[t] = {true, u->stored_bytes(), u->quarantined_entries()};
  {
    std::lock_guard lock(mu_);
    for (std::size_t t = 0; t < tiers_.size(); ++t) {
      TierCounters c;
      c.name = tiers_[t]->name();
      c.hits = hits_[t];
      c.misses = misses_[t];
      c.writes = writes[t].written;
      c.writes_refused = writes[t].refused;
      if (const auto* health = dynamic_cast<const TierHealth*>(tiers_[t].get())) {
        c.breaker_state = health->breaker_state();
        c.damaged_values = health->damaged_values();
        c.unauthenticated_values = health->unauthenticated_values();
      }
      c.holds_storage = usage[t].held;
      c.stored_bytes = usage[t].bytes;
      c.quarantined = usage[t].quarantined;
      s.tiers.push_back(std::move(c));
    }
  }
  s.writes_queued = writer_->queued();
  s.writes_dropped = writer_->dropped();
  s.writes_pending = writer_->pending();
  s.blocks_promoted = promoted_.load();
  s.copies_to_faster = copies_to_faster_.load();
  return s;
}

uint64_t TierStats::disk_cache_bytes() const {
  uint64_t bytes = 0;
  for (const TierCounters& t : tiers) bytes += t.stored_bytes;
  return bytes;
}

uint64_t TierStats::quarantined() const {
  uint64_t n = 0;
  for (const TierCounters& t : tiers) n += t.quarantined;
  return n;
}

}  // namespace clm
