// A private redis-server for `bench restore`: Debian's binary started on a
// free loopback port with persistence off, in a directory of its own, and
// stopped when this object goes. Starting fails with a clear message when
// redis-server is not installed or does not answer.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "util/error.h"

namespace clm {

class RedisProcess {
 public:
  static Result<std::unique_ptr<RedisProcess>> start(const std::string& dir);
  ~RedisProcess();
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  RedisProcess(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
};

// Whether an executable of this name is on PATH.
bool on_path(const std::string& program);

}  // namespace clm
