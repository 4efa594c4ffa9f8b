#include "app/kv_event_publisher.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

#include <zmq.hpp>

#include "app/kv_event_wire.h"

namespace clm {

namespace {

constexpr auto kReplayPollInterval = std::chrono::milliseconds(20);

std::string big_endian_8(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

uint64_t read_big_endian_8(const zmq::message_t& m) {
  uint64_t v = 0;
  const auto* p = static_cast<const unsigned char*>(m.data());
  for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct KvEventPublisher::Sockets {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  zmq::socket_t replay{context, zmq::socket_type::router};
  bool has_replay = false;
  std::deque<std::pair<uint64_t, std::string>> kept;  // (seq, encoded batch), oldest first
};

Result<std::unique_ptr<KvEventPublisher>> KvEventPublisher::open(const KvEventPublisherOptions& options) {
  auto sockets = std::make_unique<Sockets>();
  const auto bind = [](zmq::socket_t& s, const std::string& endpoint, const char* flag) -> Status {
    try {
      s.set(zmq::sockopt::linger, 250);  // what is sent at exit still leaves, briefly
      s.bind(endpoint);
      return {};
    } catch (const zmq::error_t& e) {
      return fail(std::string(flag) + " '" + endpoint + "': " + e.what());
    }
  };
  if (auto bound = bind(sockets->pub, options.endpoint, "--kv-events-endpoint"); !bound)
    return std::unexpected(bound.error());
  if (!options.replay_endpoint.empty()) {
    // A ROUTER drops what does not fit its queue to a peer: make room for a
    // whole replay (every kept batch and the end marker), which then leaves
    // as fast as the peer reads, without this thread waiting.
    sockets->replay.set(zmq::sockopt::sndhwm, static_cast<int>(std::min<std::size_t>(options.replay_batches + 1,
                                                                                     INT32_MAX)));
    if (auto bound = bind(sockets->replay, options.replay_endpoint, "--kv-events-replay-endpoint"); !bound)
      return std::unexpected(bound.error());
    sockets->has_replay = true;
  }
  return std::unique_ptr<KvEventPublisher>(new KvEventPublisher(options, std::move(sockets)));
}

KvEventPublisher::KvEventPublisher(const KvEventPublisherOptions& options, std::unique_ptr<Sockets> sockets)
    : options_(options), sockets_(std::move(sockets)) {
  counters_.endpoint = sockets_->pub.get(zmq::sockopt::last_endpoint);
  if (sockets_->has_replay) counters_.replay_endpoint = sockets_->replay.get(zmq::sockopt::last_endpoint);
  counters_.topic = options_.topic;
  if (vllm_block_hashes()) vllm_hashes_ = std::make_unique<KvEventVllmHashes>(options_.vllm_hash_seed);
  thread_ = std::thread([this] { run(); });
}

KvEventPublisher::~KvEventPublisher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void KvEventPublisher::publish(KvEvent event) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= options_.max_queued_events) {
      ++counters_.events_dropped;
      return;
    }
    queue_.push_back(std::move(event));
  }
  wake_.notify_one();
}

KvEventCounters KvEventPublisher::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void KvEventPublisher::flush() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void KvEventPublisher::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    // Without replay there is nothing to poll: sleep until events come.
    if (sockets_->has_replay) {
      wake_.wait_for(lock, kReplayPollInterval, [&] { return stopping_ || !queue_.empty(); });
      lock.unlock();
      serve_replay();
      lock.lock();
    } else {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    }
    if (queue_.empty()) {
      if (stopping_) break;
      continue;
    }
    std::vector<KvEvent> taken;
    if (queue_.size() <= options_.max_batch_events) {
      taken.swap(queue_);
    } else {
      const auto end = queue_.begin() + static_cast<std::ptrdiff_t>(options_.max_batch_events);
      taken.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
      queue_.erase(queue_.begin(), end);
    }
    busy_ = true;
    lock.unlock();
    send_batch(taken);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

void KvEventPublisher::send_batch(std::vector<KvEvent>& taken) {
  std::vector<KvEvent> events = join_kv_events(std::move(taken));
  if (vllm_hashes_) vllm_hashes_->translate(events);
  const std::string payload = encode_kv_event_batch(events, unix_seconds());
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    seq = counters_.batches_published++;
    counters_.events_published += events.size();
    if (vllm_hashes_) counters_.blocks_unhashable = vllm_hashes_->untranslated_blocks();
    for (const KvEvent& e : events) {
      if (e.kind == KvEventKind::Stored) counters_.blocks_stored[e.medium] += e.keys.size();
      else if (e.kind == KvEventKind::Removed) counters_.blocks_removed[e.medium] += e.keys.size();
      else ++counters_.clears;
    }
  }
  // A PUB socket never blocks: a subscriber past its high-water mark loses
  // messages, and sees the gap in the sequence numbers.
  zmq::socket_t& pub = sockets_->pub;
  pub.send(zmq::buffer(options_.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(big_endian_8(seq)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  if (!sockets_->has_replay) return;
  sockets_->kept.emplace_back(seq, payload);
  while (sockets_->kept.size() > options_.replay_batches) sockets_->kept.pop_front();
}

void KvEventPublisher::serve_replay() {
  zmq::socket_t& router = sockets_->replay;
  for (;;) {
    std::vector<zmq::message_t> frames;
    for (;;) {
      zmq::message_t m;
      if (!router.recv(m, zmq::recv_flags::dontwait)) break;
      const bool more = m.more();
      frames.push_back(std::move(m));
      if (!more) break;
    }
    if (frames.empty()) return;
    // [identity, empty, first seq]; anything else is not a replay request.
    if (frames.size() != 3 || frames[1].size() != 0 || frames[2].size() != 8) continue;
    {
      std::lock_guard lock(mu_);
      ++counters_.replay_requests;
    }
    const uint64_t first = read_big_endian_8(frames[2]);
    const std::string identity = frames[0].to_string();
    const auto reply = [&](const std::string& seq, const std::string& payload) {
      router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::buffer(seq), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    };
    for (const auto& [seq, payload] : sockets_->kept)
      if (seq >= first) reply(big_endian_8(seq), payload);
    reply(big_endian_8(UINT64_MAX), "");  // -1 as a signed 8-byte integer: the end
  }
}

}  // namespace clm
