#include "app/kv_event_vllm_hashes.h"

#include <algorithm>

namespace clm {

namespace {

bool remembered(const std::string& medium) { return medium != "redis"; }

}  // namespace

uint32_t KvEventVllmHashes::medium_bit(const std::string& medium) {
  auto it = std::find(media_.begin(), media_.end(), medium);
  if (it == media_.end()) it = media_.insert(media_.end(), medium);
  return uint32_t{1} << (static_cast<std::size_t>(it - media_.begin()) % 32);
}

bool KvEventVllmHashes::translate_stored(KvEvent& e) {
  const Sha256Digest* parent = nullptr;
  if (e.parent != kNoKey) {
    const auto it = held_.find(e.parent);
    if (it == held_.end()) {
      untranslated_ += e.keys.size();
      return false;
    }
    parent = &it->second.digest;
  }
  const uint32_t bit = remembered(e.medium) ? medium_bit(e.medium) : 0;
  const std::size_t bs = static_cast<std::size_t>(e.block_size);
  Sha256Digest digest{}, chained{};
  const uint64_t parent_hash = e.parent == kNoKey ? kNoKey : VllmBlockHasher::as_event_hash(*parent);
  for (std::size_t b = 0; b < e.keys.size(); ++b) {
    digest = hasher_.block(parent, std::span<const int32_t>(e.tokens).subspan(b * bs, bs));
    if (bit != 0) {
      Held& h = held_[e.keys[b]];
      h.digest = digest;
      h.media |= bit;
      parent = &h.digest;
    } else {
      chained = digest;  // not remembered: the chain goes on from a copy
      parent = &chained;
    }
    e.keys[b] = VllmBlockHasher::as_event_hash(digest);
  }
  e.parent = parent_hash;
  return true;
}

void KvEventVllmHashes::translate_removed(KvEvent& e) {
  std::vector<BlockKey> out;
  const uint32_t bit = remembered(e.medium) ? medium_bit(e.medium) : 0;
  for (BlockKey k : e.keys) {
    const auto it = held_.find(k);
    if (it == held_.end()) {
      ++untranslated_;
      continue;
    }
    out.push_back(VllmBlockHasher::as_event_hash(it->second.digest));
    it->second.media &= ~bit;
    if (it->second.media == 0) held_.erase(it);
  }
  e.keys = std::move(out);
}

void KvEventVllmHashes::translate(std::vector<KvEvent>& events) {
  std::vector<KvEvent> out;
  out.reserve(events.size());
  for (KvEvent& e : events) {
    switch (e.kind) {
      case KvEventKind::Cleared:
        held_.clear();
        break;
      case KvEventKind::Stored:
        if (!translate_stored(e)) continue;
        break;
      case KvEventKind::Removed:
        translate_removed(e);
        if (e.keys.empty()) continue;
        break;
    }
    out.push_back(std::move(e));
  }
  events = std::move(out);
}

}  // namespace clm
