// A raw TCP client for tests that misbehave on purpose (slow, huge, cut-off
// or malformed requests) where an HTTP library would refuse to: connect,
// send bytes, read whatever the server answers, with deadlines everywhere.
#pragma once

#include <sys/types.h>

#include <string>

namespace clm::test {

class RawConnection {
 public:
  // Connects to 127.0.0.1:port; ok() is false if that failed.
  explicit RawConnection(int port, int receive_buffer_bytes = 0);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Sends all of `data`; false when the server closed or reset the connection.
  bool send(const std::string& data);
  // Whatever has arrived within timeout_s (stops early at EOF, or once `until`
  // has been seen when it is not empty).
  std::string receive(double timeout_s, const std::string& until = {});
  // True when the server has closed its side (EOF or reset) within timeout_s.
  bool closed_by_server(double timeout_s);
  // Has the server sent something (or closed)? Does not wait.
  bool readable();
  void close();

 private:
  int fd_ = -1;
};

// A complete HTTP/1.1 request with a Content-Length body.
std::string http_request(const std::string& method, const std::string& path, int port, const std::string& body = {},
                         const std::string& extra_headers = {});
// The status code of the first response in `raw`; 0 when there is none.
int http_status(const std::string& raw);
// The body of the first response (after the blank line).
std::string http_body(const std::string& raw);
// The resident set of a process, in KiB; -1 when it cannot be read.
long resident_kib(pid_t pid);

}  // namespace clm::test
