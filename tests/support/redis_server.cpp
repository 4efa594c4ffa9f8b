#include "support/redis_server.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/test_paths.h"

namespace clm::test {

namespace {

// A loopback port nobody listens on now (the kernel's choice for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

RedisServer::RedisServer() {
  static int counter = 0;
  dir_ = temp_dir() + "/redis-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::filesystem::create_directories(dir_);
  port_ = free_port();
  EXPECT_NE(port_, 0) << "no free loopback port";
  EXPECT_TRUE(start()) << "redis-server did not start on port " << port_;
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool RedisServer::start() {
  if (pid_ > 0) return true;
  const std::string port = std::to_string(port_);
  const std::string log = dir_ + "/redis.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(), "--enable-debug-command", "local",
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid_ < 0) return false;
  if (wait_ready(10.0)) return true;
  kill();
  return false;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool RedisServer::wait_ready(double timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (command({"PING"}) == "PONG") return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) return false;  // it exited (redis-server missing, port taken)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{1, 0});
  if (!c || c->err) {
    if (c) redisFree(c);
    return "ERR connect";
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  std::string out = "ERR io";
  if (r) {
    switch (r->type) {
      case REDIS_REPLY_INTEGER: out = std::to_string(r->integer); break;
      case REDIS_REPLY_NIL: out = "(nil)"; break;
      case REDIS_REPLY_ERROR: out = "ERR " + std::string(r->str, r->len); break;
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS: out = std::string(r->str, r->len); break;
      default: out = "(other)"; break;
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return out;
}

}  // namespace clm::test
