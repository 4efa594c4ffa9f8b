#include "engine/session_pins.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace clm {

SessionPins::SessionPins(KvCacheManager& cache, SessionPinOptions options)
    : cache_(cache), options_(std::move(options)) {
  const double share = std::clamp(options_.max_share, 0.0, 1.0);
  max_blocks_ = static_cast<std::size_t>(std::floor(share * static_cast<double>(cache_.pool().n_blocks())));
  if (!options_.clock)
    options_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
}

SessionPins::~SessionPins() { clear(); }

double SessionPins::now() const { return options_.clock(); }

void SessionPins::hold(const std::vector<BlockId>& blocks) {
  for (BlockId id : blocks) ++holders_[id];
}

void SessionPins::drop(Pin& pin) {
  for (BlockId id : pin.blocks)
    if (auto it = holders_.find(id); it != holders_.end() && --it->second == 0) holders_.erase(it);
  cache_.release_held(pin.blocks);
  pin.blocks.clear();
}

void SessionPins::erase(std::unordered_map<std::string, Pin>::iterator it) {
  drop(it->second);
  pins_.erase(it);
}

void SessionPins::pin(const std::string& id, std::span<const int32_t> tokens, uint64_t cache_namespace, double hold_s) {
  if (max_blocks_ == 0 || hold_s <= 0.0) {
    unpin(id);
    return;
  }
  const double t = now();
  // The new chain first: blocks it shares with the old one never become
  // idle in between.
  Pin fresh{cache_.hold_prefix(tokens, cache_namespace, max_blocks_), t, t + hold_s};
  hold(fresh.blocks);
  unpin(id);
  if (fresh.blocks.empty()) return;
  pins_.emplace(id, std::move(fresh));
  // The share bound: older sessions give way to the newest, which alone
  // never exceeds it.
  while (holders_.size() > max_blocks_) {
    auto oldest = pins_.end();
    for (auto it = pins_.begin(); it != pins_.end(); ++it)
      if (it->first != id && (oldest == pins_.end() || it->second.pinned_at < oldest->second.pinned_at)) oldest = it;
    if (oldest == pins_.end()) break;
    erase(oldest);
    ++counters_.released_for_room;
  }
}

void SessionPins::unpin(const std::string& id, PinEnd end) {
  auto it = pins_.find(id);
  if (it == pins_.end()) return;
  erase(it);
  if (end == PinEnd::Lapsed) ++counters_.expired;
}

std::size_t SessionPins::expire() {
  const double t = now();
  std::size_t n = 0;
  for (auto it = pins_.begin(); it != pins_.end();) {
    auto here = it++;
    if (here->second.deadline <= t) {
      erase(here);
      ++n;
    }
  }
  counters_.expired += n;
  return n;
}

bool SessionPins::release_oldest() {
  if (pins_.empty()) return false;
  auto oldest = std::min_element(pins_.begin(), pins_.end(),
                                 [](const auto& a, const auto& b) { return a.second.pinned_at < b.second.pinned_at; });
  erase(oldest);
  ++counters_.released_for_room;
  return true;
}

void SessionPins::clear() {
  for (auto& [id, pin] : pins_) drop(pin);
  pins_.clear();
}

std::optional<double> SessionPins::next_deadline() const {
  std::optional<double> first;
  for (const auto& [id, pin] : pins_)
    if (!first || pin.deadline < *first) first = pin.deadline;
  return first;
}

SessionPinStats SessionPins::stats() const {
  SessionPinStats s = counters_;
  s.sessions = pins_.size();
  s.blocks = holders_.size();
  return s;
}

}  // namespace clm
