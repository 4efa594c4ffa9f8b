// `clmcache serve` under load and abuse, against the real binary: a crowd
// of slow connections and of streaming clients must not hold up /health,
// clients that leave stop costing generation at once, one that does not
// read loses its own stream only, SIGHUP is ignored, SIGTERM ends the
// process within its grace period whatever the clients do, and a second
// server cannot take the port.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/raw_http.h"
#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::RawConnection;
using Clock = std::chrono::steady_clock;

std::vector<std::string> model_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-m", test::shared_file("models/stories260K.gguf"), "-c", "512"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Seconds one GET /health takes on a fresh connection; a large value when
// it does not answer 200.
double health_seconds(int port) {
  const auto t0 = Clock::now();
  RawConnection c(port);
  if (!c.ok() || !c.send(test::http_request("GET", "/health", port))) return 1e9;
  if (test::http_status(c.receive(5, "}")) != 200) return 1e9;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The n-th percentile of samples (0..100), nearest rank.
double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
  return samples[std::min(samples.size() - 1, rank > 0 ? rank - 1 : 0)];
}

json get_stats(int port) {
  RawConnection c(port);
  c.send(test::http_request("GET", "/stats", port, {}, "Connection: close\r\n"));
  return json::parse(test::http_body(c.receive(10)), nullptr, false);
}

int open_file_limit() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  return r.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<int>(r.rlim_cur);
}

TEST(ServerLoad, SlowConnectionsDoNotHoldUpHealth) {
  test::ServerProcess server(model_args({"--header-timeout", "3", "--body-timeout", "1", "--keep-alive-timeout", "1"}));
  ASSERT_GT(server.port(), 0);
  // A body that never ends, and a kept-alive connection that asks nothing
  // more: each is closed at its own deadline.
  RawConnection slow_body(server.port());
  slow_body.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"pro");
  RawConnection idle(server.port());
  idle.send(test::http_request("GET", "/health", server.port()));
  EXPECT_EQ(test::http_status(idle.receive(5, "}")), 200);
  const auto opened = Clock::now();
  EXPECT_TRUE(slow_body.closed_by_server(5));
  EXPECT_TRUE(idle.closed_by_server(5));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - opened).count(), 2.5);
  // As many as this process may open, up to a thousand.
  const int n = std::min(1000, open_file_limit() - 64);
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < n; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(slow.back()->ok()) << i;
    // A head that never ends.
    slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  std::vector<double> samples;
  for (int i = 0; i < 20; ++i) {
    for (int k = 0; k < n; k += 50) slow[static_cast<std::size_t>(k)]->send("a");  // trickling
    samples.push_back(health_seconds(server.port()));
  }
  EXPECT_LE(percentile(samples, 95), 0.1) << "max " << percentile(samples, 100);
  // The whole head has a deadline: the slow ones are closed by the server.
  EXPECT_TRUE(slow.front()->closed_by_server(5));
  EXPECT_TRUE(slow.back()->closed_by_server(5));
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerLoad, SixtyFourStreamsKeepHealthFast) {
  test::ServerProcess server(model_args());
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  constexpr int kClients = 64;
  std::atomic<int> finished{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([port, i, &finished] {
      RawConnection c(port);
      const std::string body = json{{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 200},
                                    {"stream", true}}
                                   .dump();
      c.send(test::http_request("POST", "/v1/completions", port, body, "Content-Type: application/json\r\n"));
      if (c.receive(120, "data: [DONE]").find("data: [DONE]") != std::string::npos) ++finished;
    });
  }
  std::vector<double> samples;
  while (finished < kClients && samples.size() < 200) {
    samples.push_back(health_seconds(port));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(finished.load(), kClients);
  ASSERT_GE(samples.size(), 5u);
  EXPECT_LE(percentile(samples, 99), 0.1) << samples.size() << " probes, max " << percentile(samples, 100);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerLoad, AbandonedRequestsStopGenerating) {
  test::ServerProcess server(model_args());
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  const uint64_t before = get_stats(port)["scheduler"]["generated_tokens"].get<uint64_t>();
  constexpr int kRequests = 200;
  constexpr int kMaxTokens = 400;
  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", kMaxTokens}}.dump();
  for (int i = 0; i < kRequests; ++i) {
    RawConnection c(port);
    c.send(test::http_request("POST", "/v1/completions", port, body, "Content-Type: application/json\r\n"));
  }  // each closes at once
  json stats;
  for (int i = 0; i < 400; ++i) {
    stats = get_stats(port);
    if (stats["scheduler"]["running"] == 0 && stats["scheduler"]["queued"] == 0 && stats["server"]["in_flight"] == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(stats["server"]["in_flight"], 0) << stats.dump();
  const uint64_t generated = stats["scheduler"]["generated_tokens"].get<uint64_t>() - before;
  // Each was cancelled within a step or two of its client leaving: a few
  // tokens apiece, not the 80,000 asked for.
  EXPECT_LT(generated, static_cast<uint64_t>(kRequests * 8)) << generated;
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerLoad, AClientThatDoesNotReadLosesItsStreamAlone) {
  // Whichever comes first drops it: its backlog passing the bound, or the
  // write deadline (where the kernel's socket buffers absorb the whole
  // stream, as they can when the server runs slowly, e.g. under ASan).
  // The stream is long (2,000 tokens, over a megabyte of events) because
  // the scheduler may run ahead of the thread that formats and writes the
  // events: under ASan on two cores a 480-token stream was generated whole
  // before the backlog that drops it had been formatted.
  constexpr int kMaxTokens = 2000;
  test::ServerProcess server({"-m", test::shared_file("models/stories260K.gguf"), "-c", "2048",
                              "--max-stream-buffer-bytes", "8192", "--write-timeout", "2"});
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  // Logprobs with 20 alternatives make each event over half a KiB; this
  // client takes none of them, and its small window fills at once.
  RawConnection sleeper(port, 2048);
  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", kMaxTokens}, {"stream", true},
                                {"ignore_eos", true}, {"logprobs", 20}, {"temperature", 0}}
                               .dump();
  sleeper.send(test::http_request("POST", "/v1/completions", port, body, "Content-Type: application/json\r\n"));
  // Meanwhile others are served.
  EXPECT_LE(health_seconds(port), 0.1);
  json stats;
  // Until the server has let go of it: the only connection left is the
  // one asking for /stats.
  for (int i = 0; i < 600; ++i) {
    stats = get_stats(port);
    if (stats["server"]["in_flight"] == 0 && stats["scheduler"]["running"] == 0 &&
        stats["server"]["connections"] == 1)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  // Its generation was cancelled before it ran to its end, and the server
  // reset the connection rather than hold the backlog (the bytes still
  // queued for it are dropped). When the client sees the reset is up to the
  // kernels: at once in quiet runs, but after a zero window an RST may be
  // answered with a challenge ACK first (RFC 5961), which took up to 20 s
  // under ASan on a loaded machine. So the server's side is what is timed,
  // and the client only has to see the end eventually.
  EXPECT_EQ(stats["server"]["in_flight"], 0) << stats.dump();
  EXPECT_EQ(stats["server"]["connections"], 1) << stats.dump();
  EXPECT_LT(stats["scheduler"]["generated_tokens"].get<uint64_t>(), static_cast<uint64_t>(kMaxTokens))
      << stats.dump();
  EXPECT_TRUE(sleeper.closed_by_server(120));
  EXPECT_EQ(server.terminate(30), 0) << server.log();
}

TEST(ServerLoad, SigtermWithSlowClientsExitsWithinTheGrace) {
  test::ServerProcess server(model_args({"--shutdown-grace", "1"}));
  ASSERT_GT(server.port(), 0);
  const int port = server.port();
  // One trickles its head; one streams a long answer and reads nothing.
  RawConnection trickler(port);
  trickler.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  RawConnection sleeper(port, 4096);
  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 480}, {"stream", true},
                                {"logprobs", 20}}
                               .dump();
  sleeper.send(test::http_request("POST", "/v1/completions", port, body, "Content-Type: application/json\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // A hang-up signal (a closed terminal) does not stop it.
  ::kill(server.pid(), SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(health_seconds(port), 1.0);
  const auto t0 = Clock::now();
  EXPECT_EQ(server.terminate(10), 0) << server.log();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(took, 2.0);
}

TEST(ServerLoad, SecondServerOnTheSamePortFailsToStart) {
  test::ServerProcess first(model_args());
  ASSERT_GT(first.port(), 0);
  std::string command = "timeout 20 ";
  command += test::shell_quote(test::cli_binary());
  command += " serve --port ";
  command += std::to_string(first.port());
  for (const auto& a : model_args()) {
    command += ' ';
    command += test::shell_quote(a);
  }
  const test::CommandResult second = test::run_command(command);
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("cannot listen"), std::string::npos) << second.err;
  EXPECT_EQ(first.terminate(30), 0) << first.log();
}

}  // namespace
}  // namespace clm
