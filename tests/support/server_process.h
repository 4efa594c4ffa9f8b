// Runs `clmcache serve` as a child process on a port the server picks itself
// (--port 0), reading the port from the line it prints when it listens.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace clm::test {

class ServerProcess {
 public:
  // Starts the server with these extra arguments; the test fails (and port()
  // is 0) if it does not print its address within a bound.
  explicit ServerProcess(const std::vector<std::string>& args);
  ~ServerProcess();  // SIGKILL if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits up to timeout_s; returns the exit code, or -1 if
  // it did not exit (then it is killed) or died of a signal.
  int terminate(double timeout_s);
  std::string log() const;  // what it printed on stdout and stderr

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace clm::test
