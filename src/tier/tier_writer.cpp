#include "tier/tier_writer.h"

#include <algorithm>

namespace clm {

TierWriter::TierWriter(std::vector<CacheTier*> tiers, std::size_t capacity_bytes, KvEventSink* events)
    : tiers_(std::move(tiers)), capacity_bytes_(capacity_bytes), events_(events), counts_(tiers_.size()) {
  thread_ = std::thread([this] { run(); });
}

TierWriter::~TierWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool TierWriter::has_room(std::size_t kv_bytes, std::size_t n_tokens) const {
  std::lock_guard lock(mu_);
  return !stopping_ && queued_bytes_ + weight(kv_bytes, n_tokens) <= capacity_bytes_;
}

bool TierWriter::enqueue(TierEntry entry, std::size_t n_tiers) {
  const std::size_t bytes = bytes_of(entry);
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queued_bytes_ + bytes > capacity_bytes_) {
      ++dropped_;
      return false;
    }
    queued_bytes_ += bytes;
    queue_.push_back({std::move(entry), std::min(n_tiers, tiers_.size())});
    ++queued_;
  }
  wake_.notify_one();
  return true;
}

void TierWriter::count_dropped() {
  std::lock_guard lock(mu_);
  ++dropped_;
}

void TierWriter::flush() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void TierWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and everything is written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::vector<bool> ok(job.n_tiers);
    for (std::size_t i = 0; i < job.n_tiers; ++i) ok[i] = tiers_[i]->put(job.entry);
    announce_stored(job.entry, ok);
    lock.lock();
    for (std::size_t i = 0; i < job.n_tiers; ++i) ++(ok[i] ? counts_[i].written : counts_[i].refused);
    queued_bytes_ -= bytes_of(job.entry);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

void TierWriter::announce_stored(const TierEntry& entry, const std::vector<bool>& ok) const {
  if (!events_) return;
  for (std::size_t i = 0; i < ok.size(); ++i) {
    if (!ok[i]) continue;
    events_->publish(stored_event(tiers_[i]->name(), entry.key, entry.parent, entry.tokens));
  }
}

uint64_t TierWriter::queued() const {
  std::lock_guard lock(mu_);
  return queued_;
}
uint64_t TierWriter::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}
std::size_t TierWriter::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}
std::vector<TierWriteCounts> TierWriter::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace clm
