#include "support/redis_fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace clm::test {

namespace {

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

bool send_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

RedisFaultProxy::RedisFaultProxy(int upstream_port, Mode mode, double trickle_interval_s)
    : upstream_port_(upstream_port), mode_(mode), trickle_interval_s_(trickle_interval_s) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return;
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RedisFaultProxy::~RedisFaultProxy() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(connections_);
  }
  for (auto& t : threads) t.join();
  for (int fd : fds_) ::close(fd);
}

void RedisFaultProxy::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard lock(mu_);
    fds_.push_back(client);
    connections_.emplace_back([this, client] { serve(client); });
  }
}

void RedisFaultProxy::serve(int client) {
  const int upstream = mode_ == Mode::Huge ? -1 : connect_loopback(upstream_port_);
  if (upstream >= 0) {
    std::lock_guard lock(mu_);
    fds_.push_back(upstream);
  }
  const auto trickle = std::chrono::duration<double>(trickle_interval_s_);
  bool announced = false;
  char buf[16384];
  std::string pending;  // upstream's bytes not yet passed on (Trickle)
  while (!stopping_) {
    pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    const int n_fds = upstream >= 0 ? 2 : 1;
    const bool busy = (mode_ == Mode::Huge && announced) || !pending.empty();
    const int timeout_ms = busy ? 0 : 100;
    if (::poll(p, n_fds, timeout_ms) < 0) break;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t r = ::recv(client, buf, sizeof buf, 0);
      if (r <= 0) break;
      if (mode_ == Mode::Huge) {
        if (!announced) {
          const std::string head = "$400000000\r\n";
          if (!send_all(client, head.data(), head.size())) break;
          announced = true;
        }
      } else if (!send_all(upstream, buf, static_cast<std::size_t>(r))) {
        break;
      }
    }
    if (n_fds == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t r = ::recv(upstream, buf, sizeof buf, 0);
      if (r <= 0) break;
      if (mode_ == Mode::Pass) {
        if (!send_all(client, buf, static_cast<std::size_t>(r))) break;
        sent_ += static_cast<std::size_t>(r);
      } else {
        pending.append(buf, static_cast<std::size_t>(r));
      }
    }
    if (mode_ == Mode::Huge && announced) {
      std::memset(buf, 0, sizeof buf);
      if (!send_all(client, buf, sizeof buf)) break;
      sent_ += sizeof buf;
    }
    if (mode_ == Mode::Trickle && !pending.empty()) {
      std::this_thread::sleep_for(trickle);
      if (!send_all(client, pending.data(), 1)) break;
      pending.erase(0, 1);
      sent_ += 1;
    }
  }
  ::shutdown(client, SHUT_RDWR);
  if (upstream >= 0) ::shutdown(upstream, SHUT_RDWR);
}

}  // namespace clm::test
