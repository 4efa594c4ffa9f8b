// A body over --max-body-bytes sent whole, as clients that write the whole
// request before they read the answer do (Python's urllib; a raw socket
// here): the server answers 413 at once and reads and drops the rest of the
// declared body before it closes, so the client finishes sending and reads
// the answer instead of a reset connection. What it reads and how long it
// waits for it are bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/raw_http.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/shared_server_test.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::RawConnection;

constexpr std::size_t kMiB = std::size_t{1} << 20;

class ServerBodyLimit : public test::SharedServerTest<ServerBodyLimit> {
 public:
  static std::vector<std::string> server_args() {
    return {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512", "--max-body-bytes", std::to_string(kMiB)};
  }
};

std::string completion_body(std::size_t bytes) {
  return R"({"prompt": ")" + std::string(bytes, 'a') + R"(", "max_tokens": 1})";
}

void expect_413(const std::string& raw) {
  EXPECT_EQ(test::http_status(raw), 413) << raw.substr(0, 300);
  const json j = json::parse(test::http_body(raw), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << raw.substr(0, 300);
  EXPECT_EQ(j["error"]["code"], "request_too_large") << raw.substr(0, 300);
}

TEST_F(ServerBodyLimit, AWholeOversizedBodyIsReadThroughAndAnswered) {
  RawConnection c(port());
  ASSERT_TRUE(c.ok());
  // All 12 MiB go out before a byte of the answer is read: a reset would
  // fail the send, or lose the answer.
  ASSERT_TRUE(c.send(test::http_request("POST", "/v1/completions", port(), completion_body(12 * kMiB),
                                        "Content-Type: application/json\r\n")));
  expect_413(c.receive(10, "}}"));
  EXPECT_TRUE(c.closed_by_server(5));
}

TEST_F(ServerBodyLimit, PythonUrllibReadsThe413) {
  const std::string script =
      "import sys, urllib.request, urllib.error\n"
      "data = b'{\"prompt\": \"' + b'a' * (12 << 20) + b'\"}'\n"
      "req = urllib.request.Request('http://127.0.0.1:%s/v1/completions' % sys.argv[1], data=data,\n"
      "                             headers={'Content-Type': 'application/json'})\n"
      "try:\n"
      "    urllib.request.urlopen(req, timeout=30)\n"
      "    print('accepted')\n"
      "except urllib.error.HTTPError as e:\n"
      "    print(e.code)\n"
      "    print(e.read().decode())\n";
  const test::CommandResult r =
      test::run_command("python3 -c " + test::shell_quote(script) + " " + std::to_string(port()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.out.starts_with("413\n")) << r.out.substr(0, 300) << r.err;
  const json j = json::parse(r.out.substr(4), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
  EXPECT_EQ(j["error"]["code"], "request_too_large");
}

// A client that declares a gigabyte and keeps sending is read for a bounded
// number of bytes, then cut off.
TEST_F(ServerBodyLimit, WhatIsDroppedIsBoundedInBytes) {
  RawConnection c(port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: 1073741824\r\n\r\n"));
  const std::string piece(kMiB, ' ');
  std::size_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (sent < 512 * kMiB && c.send(piece)) sent += piece.size();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 64 MiB read and dropped, plus what the socket buffers held.
  EXPECT_LT(sent, 128 * kMiB);
  EXPECT_LT(seconds, 10.0);
}

// One that sends a refused body slowly is cut off after a bounded time.
TEST_F(ServerBodyLimit, WhatIsDroppedIsBoundedInTime) {
  RawConnection c(port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: 104857600\r\n\r\n"));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string piece(1024, ' ');
  double seconds = 0.0;
  while (seconds < 15.0 && c.send(piece)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  EXPECT_GT(seconds, 1.0);  // it was given a moment to finish
  EXPECT_LT(seconds, 6.0);
}

}  // namespace
}  // namespace clm
