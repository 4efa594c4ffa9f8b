// KvEventVllmHashes: clmcache keys become vLLM's chained hashes, a removal
// names the hash its block was announced under, a block held by any medium
// stays known, and what cannot be hashed is dropped and counted. (That the
// hashes are vLLM's is checked against cbor2 and hashlib in
// tests/deploy/test_kv_events.py.)
#include <gtest/gtest.h>

#include <vector>

#include "app/kv_event_vllm_hashes.h"

namespace clm {
namespace {

std::vector<int32_t> tokens(int n, int first) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

TEST(KvEventVllmHashes, ChainsRemovalsAndUnknownParents) {
  const VllmBlockHasher hasher("0");
  const Sha256Digest d1 = hasher.block(nullptr, tokens(4, 10));
  const Sha256Digest d2 = hasher.block(&d1, tokens(4, 20));
  const uint64_t h1 = VllmBlockHasher::as_event_hash(d1), h2 = VllmBlockHasher::as_event_hash(d2);
  ASSERT_NE(h1, h2);

  KvEventVllmHashes x("0");
  KvEvent chain = stored_event("cpu", 101, kNoKey, tokens(4, 10));
  chain.keys.push_back(102);
  const std::vector<int32_t> second = tokens(4, 20);
  chain.tokens.insert(chain.tokens.end(), second.begin(), second.end());
  std::vector<KvEvent> events = {chain, stored_event("disk", 101, kNoKey, tokens(4, 10)),
                                 stored_event("cpu", 103, 999, tokens(4, 30))};  // parent never seen
  x.translate(events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].keys, (std::vector<BlockKey>{h1, h2}));
  EXPECT_EQ(events[0].parent, kNoKey);
  EXPECT_EQ(events[1].keys, (std::vector<BlockKey>{h1}));
  EXPECT_EQ(x.untranslated_blocks(), 1u);

  // Gone from RAM, still on disk: known until the disk drops it too.
  events = {removed_event("cpu", {101, 102}), stored_event("disk", 102, 101, tokens(4, 20))};
  x.translate(events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].keys, (std::vector<BlockKey>{h1, h2}));
  EXPECT_EQ(events[1].keys, (std::vector<BlockKey>{h2}));
  EXPECT_EQ(events[1].parent, h1);
  events = {removed_event("disk", {101, 102}), removed_event("disk", {101})};
  x.translate(events);
  ASSERT_EQ(events.size(), 1u);  // the second names blocks no medium holds any more
  EXPECT_EQ(events[0].keys, (std::vector<BlockKey>{h1, h2}));
  EXPECT_EQ(x.untranslated_blocks(), 2u);
}

TEST(KvEventVllmHashes, TheSeedChangesEveryHash) {
  const VllmBlockHasher a("0"), b("1");
  EXPECT_NE(a.none_hash(), b.none_hash());
  EXPECT_NE(a.block(nullptr, tokens(4, 1)), b.block(nullptr, tokens(4, 1)));
  EXPECT_EQ(a.block(nullptr, tokens(4, 1)), VllmBlockHasher("0").block(nullptr, tokens(4, 1)));
}

}  // namespace
}  // namespace clm
