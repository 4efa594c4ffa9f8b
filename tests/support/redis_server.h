// A private redis-server (Debian's) for the tests of the Redis tier: started
// on a free loopback port in a fresh temporary directory, with persistence
// off, and stopped (or killed and restarted) by the test. A server that
// does not answer PING within a bound fails the test.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace clm::test {

class RedisServer {
 public:
  RedisServer();   // starts it; the test fails if it does not come up
  ~RedisServer();  // stops it
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0; }
  // SIGKILL, as a crash would, and waits for it to be gone.
  void kill();
  // Starts it again on the same port (empty: nothing was saved).
  bool start();
  // Runs one command on a connection of its own; the reply as text
  // (integers in decimal, nil as "(nil)"), or "ERR..." on failure.
  std::string command(const std::vector<std::string>& args) const;

 private:
  bool wait_ready(double timeout_s) const;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace clm::test
