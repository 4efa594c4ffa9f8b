// KvEventPublisher and the wire encoding, without a server: batches decode
// as vLLM's schema, chains are joined, replay returns kept batches, and a
// full queue drops events (counted) instead of waiting.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <msgpack.hpp>
#include <zmq.hpp>

#include "app/kv_event_publisher.h"
#include "app/kv_event_wire.h"

namespace clm {
namespace {

uint64_t seq_of(const zmq::message_t& m) {
  EXPECT_EQ(m.size(), 8u);
  uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < m.size(); ++i) v = (v << 8) | static_cast<const unsigned char*>(m.data())[i];
  return v;
}

std::string big_endian(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
  return s;
}

TEST(KvEventWire, BatchIsVllmsArrayLayout) {
  std::vector<KvEvent> events = {cleared_event(), stored_event("cpu", 0xfedcba9876543210ULL, kNoKey, {1, 2, 3, 4}),
                                 removed_event("disk", {7, 8})};
  events[1].keys.push_back(42);
  events[1].tokens.insert(events[1].tokens.end(), {5, 6, 7, 8});
  const std::string bytes = encode_kv_event_batch(events, 1700000000.5);
  const msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& batch = h.get();
  ASSERT_EQ(batch.type, msgpack::type::ARRAY);
  ASSERT_EQ(batch.via.array.size, 3u);
  EXPECT_EQ(batch.via.array.ptr[0].as<double>(), 1700000000.5);
  EXPECT_EQ(batch.via.array.ptr[2].as<int>(), 0);  // data_parallel_rank
  const msgpack::object& list = batch.via.array.ptr[1];
  ASSERT_EQ(list.via.array.size, 3u);
  const msgpack::object& cleared = list.via.array.ptr[0];
  ASSERT_EQ(cleared.via.array.size, 1u);
  EXPECT_EQ(cleared.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");
  const msgpack::object& stored = list.via.array.ptr[1];
  ASSERT_EQ(stored.via.array.size, 7u);
  EXPECT_EQ(stored.via.array.ptr[0].as<std::string>(), "BlockStored");
  EXPECT_EQ(stored.via.array.ptr[1].as<std::vector<uint64_t>>(), (std::vector<uint64_t>{0xfedcba9876543210ULL, 42}));
  EXPECT_TRUE(stored.via.array.ptr[2].is_nil());  // no parent
  EXPECT_EQ(stored.via.array.ptr[3].as<std::vector<int>>(), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(stored.via.array.ptr[4].as<int>(), 4);
  EXPECT_TRUE(stored.via.array.ptr[5].is_nil());  // lora_id
  EXPECT_EQ(stored.via.array.ptr[6].as<std::string>(), "cpu");
  const msgpack::object& removed = list.via.array.ptr[2];
  ASSERT_EQ(removed.via.array.size, 3u);
  EXPECT_EQ(removed.via.array.ptr[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(removed.via.array.ptr[1].as<std::vector<uint64_t>>(), (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(removed.via.array.ptr[2].as<std::string>(), "disk");
}

TEST(KvEventWire, ChainsAndRemovalsAreJoined) {
  std::vector<KvEvent> in = {stored_event("cpu", 11, kNoKey, {1, 2}), stored_event("cpu", 12, 11, {3, 4}),
                             stored_event("cpu", 20, kNoKey, {9, 9}),  // another chain
                             stored_event("disk", 21, 20, {5, 5}),     // another medium
                             removed_event("cpu", {11}), removed_event("cpu", {12, 13}), cleared_event(),
                             removed_event("cpu", {14})};
  const std::vector<KvEvent> out = join_kv_events(std::move(in));
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].keys, (std::vector<BlockKey>{11, 12}));
  EXPECT_EQ(out[0].tokens, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(out[0].parent, kNoKey);
  EXPECT_EQ(out[1].keys, (std::vector<BlockKey>{20}));
  EXPECT_EQ(out[2].medium, "disk");
  EXPECT_EQ(out[3].keys, (std::vector<BlockKey>{11, 12, 13}));
  EXPECT_EQ(out[4].kind, KvEventKind::Cleared);
  EXPECT_EQ(out[5].keys, (std::vector<BlockKey>{14}));
}

TEST(KvEventPublisher, PublishesAndReplays) {
  KvEventPublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  o.topic = "kv@test";
  auto opened = KvEventPublisher::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  KvEventPublisher& pub = **opened;
  const KvEventCounters bound = pub.counters();
  ASSERT_NE(bound.endpoint.find("tcp://127.0.0.1:"), std::string::npos) << bound.endpoint;

  // Published before anyone listens: lost on the PUB socket, kept for replay.
  pub.publish(stored_event("cpu", 11, kNoKey, {1, 2}));
  pub.publish(stored_event("cpu", 12, 11, {3, 4}));
  pub.publish(stored_event("disk", 11, kNoKey, {1, 2}));
  pub.flush();
  pub.publish(removed_event("cpu", {12}));
  pub.flush();
  // How events fall into batches depends on when the thread wakes; what
  // they say does not.
  const KvEventCounters c = pub.counters();
  EXPECT_GE(c.batches_published, 2u);
  EXPECT_EQ(c.blocks_stored.at("cpu"), 2u);
  EXPECT_EQ(c.blocks_stored.at("disk"), 1u);
  EXPECT_EQ(c.blocks_removed.at("cpu"), 1u);

  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 10000);
  dealer.connect(bound.replay_endpoint);
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(big_endian(0)));
  std::map<uint64_t, std::string> replayed;
  for (;;) {
    std::vector<zmq::message_t> parts;
    for (bool more = true; more;) {
      zmq::message_t m;
      ASSERT_TRUE(dealer.recv(m)) << "no replay answer";
      more = m.more();
      parts.push_back(std::move(m));
    }
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0].size(), 0u);
    if (parts[1].to_string() == std::string(8, '\xff')) break;  // -1: the end
    replayed[seq_of(parts[1])] = parts[2].to_string();
  }
  ASSERT_EQ(replayed.size(), c.batches_published);
  EXPECT_EQ(replayed.rbegin()->first, c.batches_published - 1);  // 0.. with no gap
  std::map<std::string, std::vector<uint64_t>> stored, removed;
  for (const auto& [seq, payload] : replayed) {
    const msgpack::object_handle h = msgpack::unpack(payload.data(), payload.size());
    const msgpack::object& events = h.get().via.array.ptr[1];
    for (uint32_t i = 0; i < events.via.array.size; ++i) {
      const msgpack::object& e = events.via.array.ptr[i];
      const std::string tag = e.via.array.ptr[0].as<std::string>();
      const auto hashes = e.via.array.ptr[1].as<std::vector<uint64_t>>();
      auto& into = tag == "BlockStored" ? stored[e.via.array.ptr[6].as<std::string>()]
                                        : removed[e.via.array.ptr[2].as<std::string>()];
      into.insert(into.end(), hashes.begin(), hashes.end());
    }
  }
  EXPECT_EQ(stored["cpu"], (std::vector<uint64_t>{11, 12}));
  EXPECT_EQ(stored["disk"], (std::vector<uint64_t>{11}));
  EXPECT_EQ(removed["cpu"], (std::vector<uint64_t>{12}));
  EXPECT_EQ(pub.counters().replay_requests, 1u);

  // A live subscriber gets the next batch with the next sequence number.
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv@test");
  sub.set(zmq::sockopt::rcvtimeo, 200);
  sub.connect(bound.endpoint);
  // The subscription reaches the publisher asynchronously: publish until
  // one arrives (bounded).
  bool received = false;
  for (int attempt = 0; attempt < 100 && !received; ++attempt) {
    pub.publish(cleared_event());
    std::vector<zmq::message_t> parts;
    for (bool more = true; more;) {
      zmq::message_t m;
      if (!sub.recv(m)) break;
      more = m.more();
      parts.push_back(std::move(m));
    }
    if (parts.empty()) continue;
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0].to_string(), "kv@test");
    EXPECT_GE(seq_of(parts[1]), 2u);
    received = true;
  }
  EXPECT_TRUE(received);
}

// More kept batches than ZeroMQ queues by default (1000 messages a peer):
// none of the replay, and not its end marker, may be dropped.
TEST(KvEventPublisher, ALongReplayArrivesWhole) {
  KvEventPublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  auto opened = KvEventPublisher::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  KvEventPublisher& pub = **opened;
  constexpr uint64_t kBatches = 3000;
  for (uint64_t i = 0; i < kBatches; ++i) {
    pub.publish(cleared_event());
    pub.flush();  // one batch each
  }
  ASSERT_EQ(pub.counters().batches_published, kBatches);
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 10000);
  dealer.connect(pub.counters().replay_endpoint);
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(big_endian(0)));
  uint64_t next = 0;
  for (;;) {
    std::vector<zmq::message_t> parts;
    for (bool more = true; more;) {
      zmq::message_t m;
      ASSERT_TRUE(dealer.recv(m)) << "the replay stopped after " << next << " batches";
      more = m.more();
      parts.push_back(std::move(m));
    }
    ASSERT_EQ(parts.size(), 3u);
    if (parts[1].to_string() == std::string(8, '\xff')) break;
    ASSERT_EQ(seq_of(parts[1]), next);
    ++next;
  }
  EXPECT_EQ(next, kBatches);
}

TEST(KvEventPublisher, AFullQueueDropsAndCounts) {
  KvEventPublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.max_queued_events = 1;
  auto opened = KvEventPublisher::open(o);
  ASSERT_TRUE(opened) << opened.error().message;
  KvEventPublisher& pub = **opened;
  constexpr int kEvents = 20000;
  for (int i = 0; i < kEvents; ++i) pub.publish(cleared_event());  // never joined: one event each
  pub.flush();
  const KvEventCounters c = pub.counters();
  EXPECT_GT(c.events_dropped, 0u);
  EXPECT_EQ(c.events_published + c.events_dropped, static_cast<uint64_t>(kEvents));
  EXPECT_EQ(c.clears, c.events_published);
}

TEST(KvEventPublisher, ABadEndpointIsAnErrorNamingIt) {
  KvEventPublisherOptions o;
  o.endpoint = "tcp://256.1.1.1:1";
  auto opened = KvEventPublisher::open(o);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("--kv-events-endpoint 'tcp://256.1.1.1:1'"), std::string::npos)
      << opened.error().message;
}

}  // namespace
}  // namespace clm
