// A loopback TCP proxy in front of a real redis-server that misbehaves on
// purpose, for the tests of the Redis tier's bounds: it passes requests on
// unchanged, and answers as its mode says.
//   Pass:    Redis's replies, unchanged.
//   Trickle: Redis's replies, one byte every `trickle_interval_s`.
//   Huge:    for any request, a bulk reply that announces 400 MB and sends
//            zeros for as long as the client reads.
// Threads of its own, one per connection; everything stops with it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clm::test {

class RedisFaultProxy {
 public:
  enum class Mode { Pass, Trickle, Huge };

  RedisFaultProxy(int upstream_port, Mode mode, double trickle_interval_s = 0.15);
  ~RedisFaultProxy();
  RedisFaultProxy(const RedisFaultProxy&) = delete;
  RedisFaultProxy& operator=(const RedisFaultProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  // Bytes sent to clients so far.
  std::size_t bytes_sent() const { return sent_.load(); }

 private:
  void accept_loop();
  void serve(int client);

  int upstream_port_;
  Mode mode_;
  double trickle_interval_s_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> sent_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::vector<int> fds_;  // every socket open, closed on stop to end their threads
};

}  // namespace clm::test
