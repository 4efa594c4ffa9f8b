#include "redis_process.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

namespace clm {

namespace {

// A loopback port that nobody listens on now: the kernel picks it for a
// socket bound to port 0.
int unused_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

bool answers_ping(int port) {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeval{0, 200000});
  bool ok = false;
  if (c && !c->err) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply && reply->type == REDIS_REPLY_STATUS && std::string(reply->str, reply->len) == "PONG";
    if (reply) freeReplyObject(reply);
  }
  if (c) redisFree(c);
  return ok;
}

}  // namespace

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

Result<std::unique_ptr<RedisProcess>> RedisProcess::start(const std::string& dir) {
  if (!on_path("redis-server")) return fail("redis-server is not installed (apt-get install redis-server)");
  const int port = unused_loopback_port();
  if (port == 0) return fail("no free loopback port for redis-server");
  const std::string port_text = std::to_string(port);
  const std::string log = dir + "/redis.log";
  const pid_t pid = ::fork();
  if (pid < 0) return fail("cannot fork redis-server");
  if (pid == 0) {
    ::execlp("redis-server", "redis-server", "--port", port_text.c_str(), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", dir.c_str(), "--logfile", log.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::unique_ptr<RedisProcess> process(new RedisProcess(pid, port));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (answers_ping(port)) return process;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      process->pid_ = -1;
      return fail("redis-server exited at start (see " + log + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fail("redis-server did not answer within 10 s (see " + log + ")");
}

RedisProcess::~RedisProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
}

}  // namespace clm
