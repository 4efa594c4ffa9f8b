// `--evict-positions compact` (KvCacheManager::compact_positions and the
// scheduler's use of it) on the real model: after a sequence forgets a
// block, its written slots hold positions 0, 1, ... again, the moved K is
// what computing the token at its new position gives (within rounding), V
// is untouched, and blocks another sequence or the prefix index holds are
// copied first, never rotated under their readers. A compacting
// conversation runs to 4x the context with every position below it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/rope_shift.h"
#include "model/batch.h"
#include "scheduler_rig.h"

namespace clm::test {
namespace {

constexpr int kBlock = 16;

enum class Holder { OwnUncached, OwnCached, Shared };

// Reads one element of K as float.
float k_at(const KvPool& pool, const BlockTable& t, int32_t slot, int layer, int head, int d) {
  const KvGeometry& g = pool.geometry();
  const std::byte* block = t.view().blocks[static_cast<std::size_t>(slot / g.block_size)];
  const std::size_t at = g.k_offset(layer, head) + static_cast<std::size_t>(slot % g.block_size) * g.k_row_bytes() +
                         static_cast<std::size_t>(d) * sizeof(float);
  float v = 0.0f;
  std::memcpy(&v, block + at, sizeof v);  // the rigs below keep K/V in f32
  return v;
}

// Computes `tokens` into a fresh sequence at positions first_pos, first_pos + 1, ...
void compute(Rig& rig, CachedSequence& seq, const std::vector<int32_t>& tokens, int32_t first_pos) {
  ASSERT_TRUE(rig.cache->reserve(seq, static_cast<int>(tokens.size())));
  seq.next_pos = first_pos;
  Batch batch;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const int32_t slot = rig.cache->append(seq, tokens[i]);
    batch.add(tokens[i], seq.table.positions()[static_cast<std::size_t>(slot)], 0, slot, false);
  }
  const std::vector<KvSeqView> views{seq.table.view()};
  ASSERT_TRUE(rig.model.forward(batch, KvView{rig.pool->geometry(), views}, {}, rig.threads));
  rig.cache->commit(seq);
}

RigOptions f32_rig(bool prefix_caching) {
  RigOptions o;
  o.n_blocks = 32;
  o.block_size = kBlock;
  o.kv_types = KvType::F32;
  o.prefix_caching = prefix_caching;
  return o;
}

void check_compaction(Holder holder) {
  Rig rig(real_model(), f32_rig(holder != Holder::OwnUncached));
  const ModelConfig& c = real_model().config();
  const KvGeometry& g = rig.pool->geometry();
  const auto tokens = prompt_of(5 * kBlock, 7, c.n_vocab);
  CachedSequence seq(kBlock), other(kBlock);
  ASSERT_EQ(rig.cache->begin(seq, tokens, 0), 0);  // the index's key context
  compute(rig, seq, tokens, 0);
  if (holder == Holder::Shared) rig.cache->fork(seq, other);
  const std::vector<BlockId> before_blocks = seq.table.blocks();
  std::vector<std::vector<std::byte>> before_bytes;
  for (BlockId id : before_blocks) {
    const std::byte* p = rig.pool->block_data(id);
    before_bytes.emplace_back(p, p + g.block_bytes());
  }

  rig.cache->evict_block(seq, 1);  // slots 16.. now hold tokens 32.. at positions 32..
  const std::vector<int32_t> kept_positions = seq.table.positions();
  ASSERT_EQ(rig.cache->compact_positions(seq), kBlock);
  const int n = seq.written;
  ASSERT_EQ(n, 4 * kBlock);
  for (int s = 0; s < n; ++s) ASSERT_EQ(seq.table.positions()[static_cast<std::size_t>(s)], s) << "slot " << s;
  EXPECT_EQ(seq.next_pos, n);
  EXPECT_EQ(rig.cache->compact_positions(seq), 0);  // nothing left to close

  // Every layer: each moved slot's K is its old K rotated by the position
  // change (the kernel's scalar reference); V and the unmoved block are
  // untouched.
  const RopeShiftParams rope = rope_shift_params(c);
  const RopeShiftTable back = make_rope_shift_table(rope, -kBlock);
  for (int s = 0; s < n; ++s) {
    const std::size_t old_block = static_cast<std::size_t>(s < kBlock ? 0 : s / kBlock + 1);
    const std::byte* old = before_bytes[old_block].data();
    const std::size_t row = g.k_row_bytes();
    const std::size_t r = static_cast<std::size_t>(s % kBlock) * row;
    const std::byte* now = seq.table.view().blocks[static_cast<std::size_t>(s / kBlock)];
    for (int layer = 0; layer < g.n_layers; ++layer)
      for (int h = 0; h < g.n_kv_heads; ++h) {
        std::vector<std::byte> expect(row);
        if (kept_positions[static_cast<std::size_t>(s)] == s)
          std::memcpy(expect.data(), old + g.k_offset(layer, h) + r, row);
        else
          rope_shift_rows_scalar(old + g.k_offset(layer, h) + r, expect.data(), g.types.k, 1,
                                 static_cast<std::size_t>(c.head_dim), rope, back);
        ASSERT_EQ(std::memcmp(expect.data(), now + g.k_offset(layer, h) + r, row), 0)
            << "K of slot " << s << " layer " << layer << " head " << h;
        ASSERT_EQ(std::memcmp(old + g.v_offset(layer, h) + r, now + g.v_offset(layer, h) + r, row), 0)
            << "V of slot " << s << " layer " << layer << " head " << h;
      }
  }

  // The first layer's K depends on nothing but the token and its position:
  // computing the kept tokens afresh at positions 0.. gives the moved K
  // within rounding.
  std::vector<int32_t> kept(tokens.begin(), tokens.begin() + kBlock);
  kept.insert(kept.end(), tokens.begin() + 2 * kBlock, tokens.end());
  CachedSequence fresh(kBlock);
  compute(rig, fresh, kept, 0);
  for (int s = 0; s < n; ++s)
    for (int h = 0; h < g.n_kv_heads; ++h)
      for (int d = 0; d < c.head_dim; ++d) {
        const float want = k_at(*rig.pool, fresh.table, s, 0, h, d);
        const float got = k_at(*rig.pool, seq.table, s, 0, h, d);
        ASSERT_NEAR(got, want, 2e-5f * std::max(1.0f, std::fabs(want))) << "slot " << s << " head " << h << " dim " << d;
      }

  // Blocks another sequence holds or the index names were copied, not
  // rotated: the other sequence and the cached originals read what they did.
  if (holder != Holder::OwnUncached) {
    for (std::size_t b = 1; b < seq.table.blocks().size(); ++b)
      EXPECT_EQ(std::find(before_blocks.begin(), before_blocks.end(), seq.table.blocks()[b]), before_blocks.end())
          << "block " << b << " was rotated in place";
    for (std::size_t b = 0; b < before_blocks.size(); ++b)
      EXPECT_EQ(std::memcmp(rig.pool->block_data(before_blocks[b]), before_bytes[b].data(), g.block_bytes()), 0)
          << "original block " << b << " changed";
  }
  if (holder == Holder::Shared) {
    for (int s = 0; s < other.table.n_slots(); ++s) EXPECT_EQ(other.table.positions()[static_cast<std::size_t>(s)], s);
  }
  rig.cache->release(fresh);
  rig.cache->release(seq);
  rig.cache->release(other);
  // The exact prefix the index offers is the original, uncompacted chain
  // (all of the prompt but its last token).
  if (holder != Holder::OwnUncached) {
    EXPECT_EQ(rig.cache->match_prefix(tokens, 0), 5 * kBlock - 1);
  }
  rig.cache->clear_cached();
  EXPECT_EQ(rig.pool->n_free(), rig.pool->n_blocks());
}

TEST(KvCompact, OwnBlocksAreRotatedInPlace) { check_compaction(Holder::OwnUncached); }
TEST(KvCompact, CachedBlocksAreCopiedFirst) { check_compaction(Holder::OwnCached); }
TEST(KvCompact, SharedBlocksAreCopiedFirst) { check_compaction(Holder::Shared); }

TEST(KvCompact, NothingChangesWhenThePoolCannotGiveTheCopies) {
  RigOptions o = f32_rig(true);
  o.n_blocks = 10;
  Rig rig(real_model(), o);
  CachedSequence seq(kBlock), other(kBlock);
  compute(rig, seq, prompt_of(5 * kBlock, 8, real_model().config().n_vocab), 0);
  rig.cache->fork(seq, other);  // 5 blocks shared, 5 free
  CachedSequence hog(kBlock);
  ASSERT_TRUE(rig.cache->reserve(hog, 3 * kBlock));  // 2 left; the 3 moved blocks need 3 copies
  rig.cache->evict_block(seq, 1);
  const std::vector<int32_t> positions = seq.table.positions();
  const std::vector<BlockId> blocks = seq.table.blocks();
  EXPECT_EQ(rig.cache->compact_positions(seq), 0);
  EXPECT_EQ(seq.table.positions(), positions);
  EXPECT_EQ(seq.table.blocks(), blocks);
  rig.cache->release(hog);  // room now: every hole closes at the next call
  EXPECT_EQ(rig.cache->compact_positions(seq), kBlock);
  for (int s = 0; s < seq.written; ++s) EXPECT_EQ(seq.table.positions()[static_cast<std::size_t>(s)], s);
  rig.cache->release(seq);
  rig.cache->release(other);
  rig.cache->clear_cached();
  EXPECT_EQ(rig.pool->n_free(), rig.pool->n_blocks());
}

// A conversation that forgets and compacts: generation to 4x the context
// and a prompt 3x the context scored chunk by chunk, every position the
// sequence ever holds below the context; until the first block is
// forgotten, compaction changes no logit.
RigOptions compact_rig(EvictPositions positions) {
  RigOptions o;
  o.n_blocks = 64;
  o.block_size = kBlock;
  o.threads = 2;
  o.scheduler.n_ctx = 128;
  o.scheduler.max_batch_tokens = 32;
  o.scheduler.kv_budget_tokens = 112;
  o.scheduler.evict_positions = positions;
  return o;
}

TEST(KvCompact, LongGenerationStaysInsideTheContext) {
  Rig rig(real_model(), compact_rig(EvictPositions::Compact));
  Rig keep(real_model(), compact_rig(EvictPositions::Keep));
  const int n_new = 4 * 128;
  const auto prompt = prompt_of(20, 1, real_model().config().n_vocab);
  Recorder rec;
  auto id = rec.submit(*rig.scheduler, greedy_request(prompt, n_new, true));
  ASSERT_TRUE(id) << id.error().message;
  int32_t highest = 0;
  while (rig.scheduler->step())
    for (const RunningSequence& r : rig.scheduler->running()) highest = std::max(highest, r.next_position);
  const RequestSummary& s = rec.done[*id].front();
  EXPECT_EQ(s.stop_reason, "length");
  EXPECT_TRUE(s.note.empty()) << s.note;
  EXPECT_EQ(s.generated_tokens, n_new);
  EXPECT_GT(s.evicted_tokens, 2 * 128);
  // The budget and the block still filling (protected blocks may add a few).
  EXPECT_LE(highest, 112 + 3 * kBlock);
  EXPECT_LT(highest, 128 + kBlock);
  for (const TokenEvent& ev : rec.tokens[*id]) ASSERT_TRUE(std::isfinite(ev.logprob));

  std::vector<TokenEvent> kept_events;
  run_one(keep, greedy_request(prompt, n_new, true), &kept_events);
  // Tokens 20 + i < 112 fit the budget: nothing was forgotten before them.
  for (std::size_t i = 0; i + 20 < 112 - kBlock; ++i)
    ASSERT_TRUE(bitwise_equal(rec.tokens[*id][i].logits, kept_events[i].logits)) << "token " << i;
  expect_nothing_held(rig);
}

TEST(KvCompact, LongPromptIsScoredWithCompactedPositions) {
  RigOptions o = compact_rig(EvictPositions::Compact);
  o.scheduler.evict.protect_patterns = {};
  Rig rig(real_model(), o);
  Request r = greedy_request(prompt_of(3 * 128, 2, real_model().config().n_vocab), 4);
  r.prompt_logprobs = 0;
  Recorder rec;
  auto id = rec.submit(*rig.scheduler, r);
  ASSERT_TRUE(id) << id.error().message;
  int32_t highest = 0;
  while (rig.scheduler->step())
    for (const RunningSequence& q : rig.scheduler->running()) highest = std::max(highest, q.next_position);
  const RequestSummary& s = rec.done[*id].front();
  EXPECT_EQ(s.generated_tokens, 4);
  EXPECT_GT(s.evicted_tokens, 2 * 128 - 112);
  EXPECT_LT(highest, 112 + 32 + kBlock);  // the budget and one chunk
  for (std::size_t i = 1; i < s.prompt_logprobs.size(); ++i) {
    ASSERT_TRUE(s.prompt_logprobs[i].has_value()) << i;
    ASSERT_TRUE(std::isfinite(s.prompt_logprobs[i]->logprob)) << i;
  }
  expect_nothing_held(rig);
}

}  // namespace
}  // namespace clm::test
