// KvEventPublisher: sends the cache's KV events to cache-aware routers in
// vLLM's format over ZeroMQ (serve --kv-events-endpoint). The scheduler and
// the tiers only append to a bounded queue (publish() never waits; a full
// queue drops the event and counts it). One thread owns the sockets: it
// takes what is queued, joins a chain's consecutive blocks into one event,
// and sends one multipart message per batch, [topic, 8-byte big-endian
// sequence number, msgpack EventBatch], on a PUB socket. The last batches
// are kept so that a subscriber that saw a gap in the sequence can ask a
// ROUTER socket for them: it sends [empty frame, 8-byte big-endian first
// sequence number] (a DEALER's request) and gets [empty, seq, batch] for
// every kept batch from that one on, then [empty, -1 as 8 bytes, empty].
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/kv_event_vllm_hashes.h"
#include "cache/kv_event.h"
#include "util/error.h"

namespace clm {

struct KvEventPublisherOptions {
  std::string endpoint;         // PUB, bound: tcp://HOST:PORT (PORT * picks a free one), ipc://PATH
  std::string replay_endpoint;  // ROUTER, bound; empty: no replay
  std::string topic = "kv-events";
  std::size_t max_queued_events = 100000;  // beyond it events are dropped
  std::size_t replay_batches = 10000;      // batches kept for replay
  std::size_t max_batch_events = 1024;     // events per batch at most
  // Block hashes: clmcache's own keys, or vLLM's sha256_cbor hashes chained
  // from vllm_hash_seed (its PYTHONHASHSEED), which a router can compute
  // from a prompt (kv_event_vllm_hashes.h).
  std::string block_hash = "clmcache";  // or "vllm"
  std::string vllm_hash_seed;
};

struct KvEventCounters {
  std::string endpoint;          // as bound (a * port resolved)
  std::string replay_endpoint;   // empty: none
  std::string topic;
  uint64_t batches_published = 0;  // also the sequence number the next batch gets
  uint64_t events_published = 0;   // events sent, after joining chains
  uint64_t events_dropped = 0;     // the queue was full
  uint64_t replay_requests = 0;
  std::map<std::string, uint64_t> blocks_stored;   // by medium
  std::map<std::string, uint64_t> blocks_removed;  // by medium
  uint64_t clears = 0;
  uint64_t blocks_unhashable = 0;  // vLLM hashes: blocks whose parent's hash was not known (not sent)
};

class KvEventPublisher : public KvEventSink {
 public:
  // Binds the sockets; an endpoint ZeroMQ refuses is an error naming it.
  static Result<std::unique_ptr<KvEventPublisher>> open(const KvEventPublisherOptions& options);
  // Sends what is queued, then closes the sockets.
  ~KvEventPublisher() override;
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  void publish(KvEvent event) override;
  KvEventCounters counters() const;
  bool vllm_block_hashes() const { return options_.block_hash == "vllm"; }
  // Waits until everything queued so far has been sent (tests, benchmarks).
  void flush();

 private:
  struct Sockets;
  KvEventPublisher(const KvEventPublisherOptions& options, std::unique_ptr<Sockets> sockets);
  void run();
  void send_batch(std::vector<KvEvent>& events);
  void serve_replay();

  KvEventPublisherOptions options_;
  std::unique_ptr<Sockets> sockets_;  // used by the thread alone once it runs
  std::unique_ptr<KvEventVllmHashes> vllm_hashes_;  // the thread's too; null: clmcache's keys
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::vector<KvEvent> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  KvEventCounters counters_;
  std::thread thread_;
};

}  // namespace clm
