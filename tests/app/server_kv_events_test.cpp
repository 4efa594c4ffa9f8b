// `clmcache serve --kv-events-endpoint`: a subscriber decoding vLLM's KV
// event schema sees the RAM pool's and the disk tier's blocks come and go,
// recovers what it missed before it connected through the replay socket,
// and ends with exactly the blocks /stats says the prefix index holds.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

std::vector<zmq::message_t> receive_message(zmq::socket_t& s) {
  std::vector<zmq::message_t> parts;
  for (bool more = true; more;) {
    zmq::message_t m;
    if (!s.recv(m)) return {};
    more = m.more();
    parts.push_back(std::move(m));
  }
  return parts;
}

uint64_t seq_of(const zmq::message_t& m) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < m.size(); ++i) v = (v << 8) | static_cast<const unsigned char*>(m.data())[i];
  return v;
}

// What the events say, replayed in sequence order.
struct Tally {
  std::map<std::string, uint64_t> stored, removed;
  std::map<std::string, std::set<uint64_t>> live;  // by medium
  int clears = 0;
  std::vector<std::string> problems;

  void apply(const msgpack::object& batch) {
    if (batch.type != msgpack::type::ARRAY || batch.via.array.size < 2) {
      problems.push_back("a batch that is not [ts, events, ...]");
      return;
    }
    const msgpack::object& events = batch.via.array.ptr[1];
    for (uint32_t i = 0; i < events.via.array.size; ++i) apply_event(events.via.array.ptr[i]);
  }
  void apply_event(const msgpack::object& e) {
    const msgpack::object* f = e.via.array.ptr;
    const std::string tag = f[0].as<std::string>();
    if (tag == "AllBlocksCleared") {
      ++clears;
      live.clear();
      return;
    }
    const auto hashes = f[1].as<std::vector<uint64_t>>();
    if (tag == "BlockStored") {
      if (e.via.array.size != 7) problems.push_back("BlockStored without 7 fields");
      const auto tokens = f[3].as<std::vector<int>>();
      const int block_size = f[4].as<int>();
      if (tokens.size() != hashes.size() * static_cast<std::size_t>(block_size))
        problems.push_back("BlockStored whose tokens are not its blocks");
      if (!f[5].is_nil()) problems.push_back("a lora_id");
      const std::string medium = f[6].as<std::string>();
      stored[medium] += hashes.size();
      if (medium == "cpu") {
        // A chain's parent is resident before its child.
        if (!f[2].is_nil() && live["cpu"].count(f[2].as<uint64_t>()) == 0)
          problems.push_back("a cpu block stored before its parent");
        for (uint64_t h : hashes)
          if (!live["cpu"].insert(h).second) problems.push_back("a cpu block stored twice");
      } else {
        live[medium].insert(hashes.begin(), hashes.end());
      }
    } else if (tag == "BlockRemoved") {
      const std::string medium = f[2].as<std::string>();
      removed[medium] += hashes.size();
      for (uint64_t h : hashes)
        if (live[medium].erase(h) == 0 && medium == "cpu") problems.push_back("a cpu block removed that was not stored");
    } else {
      problems.push_back("unknown event " + tag);
    }
  }
};

class ServerKvEventsTest : public ::testing::Test {
 protected:
  json stats() {
    httplib::Client c("127.0.0.1", server_->port());
    auto res = c.Get("/stats");
    EXPECT_TRUE(res);
    return res ? json::parse(res->body) : json::object();
  }
  void complete(const std::string& prompt) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    const json body = {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  }
  // Until the tier writer is idle and no batch has gone out for a while.
  json settled() {
    json s = stats();
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      json next = stats();
      if (next["kv_events"]["seq"] == s["kv_events"]["seq"] && next["tiers"]["writes_pending"] == 0) return next;
      s = std::move(next);
    }
    ADD_FAILURE() << "KV events did not settle";
    return s;
  }
  std::unique_ptr<test::ServerProcess> server_;
};

TEST_F(ServerKvEventsTest, SubscriberSeesWhatTheCacheHolds) {
  const std::string disk = test::temp_dir();
  server_ = std::make_unique<test::ServerProcess>(std::vector<std::string>{
      "-m", test::shared_file("models/stories260K.gguf"), "-c", "512", "--disk-cache", disk,
      // A cap of a few blocks: writing more evicts (BlockRemoved "disk").
      "--disk-cache-max-gb", "0.0003", "--kv-events-endpoint", "tcp://127.0.0.1:*", "--kv-events-replay-endpoint",
      "tcp://127.0.0.1:*", "--kv-events-topic", "kv@node-a@stories"});
  ASSERT_GT(server_->port(), 0);
  const json bound = stats()["kv_events"];
  ASSERT_EQ(bound["enabled"], true) << bound.dump();
  EXPECT_EQ(bound["topic"], "kv@node-a@stories");

  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv@");
  sub.set(zmq::sockopt::rcvtimeo, 500);
  sub.connect(bound["endpoint"].get<std::string>());
  // Distinct prompts of several blocks each, more than the pool holds, each
  // sent twice (the second attaches the first's blocks).
  const char* words[] = {"dog", "cat", "bird", "fish", "frog", "duck", "bear", "fox"};
  for (const char* w : words) {
    std::string prompt;
    for (int i = 0; i < 14; ++i) prompt += std::string("The ") + w + " ran to the big tree " + std::to_string(i) + ". ";
    complete(prompt);
    complete(prompt);
  }
  const json s = settled();
  const uint64_t n_batches = s["kv_events"]["seq"].get<uint64_t>();
  ASSERT_GT(n_batches, 0u);

  std::map<uint64_t, std::string> seen;  // what the live subscription delivered
  for (auto parts = receive_message(sub); !parts.empty(); parts = receive_message(sub)) {
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0].to_string(), "kv@node-a@stories");
    ASSERT_EQ(parts[1].size(), 8u);
    seen[seq_of(parts[1])] = parts[2].to_string();
  }
  // It joined late, so it missed the start (the first batch at least, sent
  // before the model loaded): ask the replay socket for everything.
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 10000);
  dealer.connect(bound["replay_endpoint"].get<std::string>());
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(std::string(8, '\0')));
  std::map<uint64_t, std::string> all;
  for (;;) {
    auto parts = receive_message(dealer);
    ASSERT_EQ(parts.size(), 3u) << "no replay answer";
    if (parts[1].to_string() == std::string(8, '\xff')) break;
    all[seq_of(parts[1])] = parts[2].to_string();
  }
  ASSERT_EQ(all.size(), n_batches);
  EXPECT_EQ(all.begin()->first, 0u);
  EXPECT_EQ(all.rbegin()->first, n_batches - 1);
  for (const auto& [seq, payload] : seen) EXPECT_EQ(all[seq], payload) << "seq " << seq;

  Tally t;
  for (const auto& [seq, payload] : all) {
    const msgpack::object_handle h = msgpack::unpack(payload.data(), payload.size());
    if (seq == 0) {
      const msgpack::object& first = h.get().via.array.ptr[1].via.array.ptr[0];
      EXPECT_EQ(first.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");
    }
    t.apply(h.get());
  }
  EXPECT_TRUE(t.problems.empty()) << t.problems.front();
  EXPECT_EQ(t.clears, 1);
  const json& ev = s["kv_events"];
  EXPECT_EQ(ev["events_dropped"], 0);
  EXPECT_EQ(json(t.stored), ev["blocks_stored"]);
  EXPECT_EQ(json(t.removed), ev["blocks_removed"]);
  // The pool was too small for every prompt: blocks left RAM, and the disk
  // cap pushed entries out too.
  EXPECT_GT(t.removed["cpu"], 0u);
  EXPECT_GT(t.stored["disk"], 0u);
  EXPECT_GT(t.removed["disk"], 0u);
  // What is still resident is exactly what the prefix index holds.
  EXPECT_EQ(t.live["cpu"].size(), s["cache"]["prefix_blocks"].get<std::size_t>());
  EXPECT_GT(s["cache"]["prefix_blocks"].get<int>(), 0);
  EXPECT_EQ(server_->terminate(30), 0) << server_->log();
}

TEST(ServerKvEventsFlags, MisusedFlagsAreClearErrors) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto fails_with = [&](const std::string& extra, const std::string& message) {
    const test::CommandResult r = test::run_command(test::shell_quote(test::cli_binary()) + " serve --port 0 -m " +
                                                    test::shell_quote(model) + " -c 256 " + extra);
    EXPECT_NE(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  fails_with("--kv-events-topic t", "--kv-events-topic needs --kv-events-endpoint");
  fails_with("--kv-events-replay-endpoint 'tcp://127.0.0.1:*'", "needs --kv-events-endpoint");
  fails_with("--kv-events-endpoint 127.0.0.1:5557", "expected tcp://HOST:PORT or ipc://PATH");
  fails_with("--kv-events-endpoint tcp://256.0.0.1:5557", "--kv-events-endpoint 'tcp://256.0.0.1:5557'");
  fails_with("--kv-events-endpoint 'tcp://127.0.0.1:*' --kv-events-block-hash vllm", "needs --kv-events-hash-seed");
  fails_with("--kv-events-endpoint 'tcp://127.0.0.1:*' --kv-events-hash-seed 0", "is for --kv-events-block-hash vllm");
  fails_with("--kv-events-endpoint 'tcp://127.0.0.1:*' --kv-events-block-hash sha1", "--kv-events-block-hash");
}

}  // namespace
}  // namespace clm
