#include "cache/kv_pool.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "cache/block_table.h"

namespace clm {
namespace {

KvGeometry small_geometry() {
  KvGeometry g;
  g.n_layers = 2;
  g.n_kv_heads = 2;
  g.head_dim = 4;
  g.block_size = 4;
  g.types = KvType::F16;
  return g;
}

TEST(KvPool, AllocatesDistinctBlocksUntilExhausted) {
  auto pool = KvPool::create(small_geometry(), 5);
  ASSERT_TRUE(pool);
  std::set<BlockId> seen;
  for (int i = 0; i < 5; ++i) {
    const BlockId id = (*pool)->allocate();
    ASSERT_NE(id, kNoBlock);
    EXPECT_TRUE(seen.insert(id).second);
    EXPECT_EQ((*pool)->refcount(id), 1);
  }
  EXPECT_EQ((*pool)->allocate(), kNoBlock);
  EXPECT_EQ((*pool)->n_free(), 0u);
}

TEST(KvPool, BlockBytesDoNotOverlap) {
  const KvGeometry g = small_geometry();
  auto pool = KvPool::create(g, 3);
  ASSERT_TRUE(pool);
  const BlockId a = (*pool)->allocate(), b = (*pool)->allocate();
  const auto pa = reinterpret_cast<uintptr_t>((*pool)->block_data(a));
  const auto pb = reinterpret_cast<uintptr_t>((*pool)->block_data(b));
  EXPECT_GE(pa > pb ? pa - pb : pb - pa, g.block_bytes());
  EXPECT_EQ(g.block_bytes(), 2u * 2u * 2u * 4u * 4u * 2u);  // layers * K|V * heads * tokens * dim * f16
}

// Pages of `bytes` at p that are resident (mincore).
std::size_t resident_pages(const std::byte* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  EXPECT_EQ(::mincore(const_cast<std::byte*>(p), bytes, in.data()), 0);
  return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

// A large pool costs no start-up time or resident memory: its pages are
// committed as blocks are written, and every byte reads 0 until then.
TEST(KvPool, MemoryIsCommittedOnlyAsBlocksAreWrittenAndReadsZeroBefore) {
  KvGeometry g = small_geometry();
  g.n_layers = 16;
  g.head_dim = 64;
  g.block_size = 32;  // 256 KiB a block
  const std::size_t n = 256;  // 64 MiB
  auto pool = KvPool::create(g, n);
  ASSERT_TRUE(pool);
  KvPool& p = **pool;
  EXPECT_EQ(resident_pages(p.block_data(0), p.arena_bytes()), 0u);
  const BlockId id = p.allocate();
  std::byte* data = p.block_data(id);
  EXPECT_TRUE(std::all_of(data, data + g.block_bytes(), [](std::byte b) { return b == std::byte{0}; }));
  std::fill(data, data + g.block_bytes(), std::byte{7});
  const std::size_t after = resident_pages(p.block_data(0), p.arena_bytes());
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GE(after * page, g.block_bytes());
  EXPECT_LE(after * page, p.arena_bytes() / 8) << "far less than the whole arena";
}

TEST(KvPool, ReleaseToZeroLeavesBlockIdleUntilFreed) {
  auto pool = KvPool::create(small_geometry(), 2);
  ASSERT_TRUE(pool);
  KvPool& p = **pool;
  const BlockId id = p.allocate();
  p.retain(id);
  EXPECT_EQ(p.refcount(id), 2);
  EXPECT_EQ(p.release(id), 1);
  EXPECT_EQ(p.n_free(), 1u);
  EXPECT_EQ(p.release(id), 0);
  // Idle: unreferenced but not free until its owner says so.
  EXPECT_EQ(p.n_free(), 1u);
  EXPECT_FALSE(p.is_free(id));
  p.retain(id);  // an idle block can be revived
  EXPECT_EQ(p.release(id), 0);
  p.free(id);
  EXPECT_TRUE(p.is_free(id));
  EXPECT_EQ(p.n_free(), 2u);
}

TEST(KvPool, RejectsBadGeometryAndSizes) {
  KvGeometry g = small_geometry();
  EXPECT_FALSE(KvPool::create(g, 0));
  g.head_dim = 0;
  EXPECT_FALSE(KvPool::create(g, 4));
}

TEST(KvPool, BlocksForBytesRoundsDownButKeepsOne) {
  const KvGeometry g = small_geometry();
  EXPECT_EQ(KvPool::blocks_for_bytes(g, g.block_bytes() * 7 + 1), 7u);
  EXPECT_EQ(KvPool::blocks_for_bytes(g, 1), 1u);
}

TEST(BlockTable, ReservesWholeBlocksAndReleasesThem) {
  auto pool = KvPool::create(small_geometry(), 4);
  ASSERT_TRUE(pool);
  KvPool& p = **pool;
  BlockTable t(4);
  ASSERT_TRUE(t.reserve(p, 5));  // 5 slots of 4 -> 2 blocks
  EXPECT_EQ(t.blocks().size(), 2u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.append(100 + i, 10 + i), i);
  ASSERT_TRUE(t.reserve(p, 3));  // fits in the second block
  EXPECT_EQ(t.blocks().size(), 2u);
  ASSERT_TRUE(t.reserve(p, 4));  // needs a third
  EXPECT_EQ(t.blocks().size(), 3u);
  const KvSeqView v = t.view();
  EXPECT_EQ(v.blocks.size(), 3u);
  ASSERT_EQ(v.slot_positions.size(), 5u);
  EXPECT_EQ(v.slot_positions[4], 14);
  EXPECT_EQ(v.blocks[1], p.block_data(t.blocks()[1]));
  t.release(p);
  EXPECT_EQ(p.n_free(), 4u);
  EXPECT_EQ(t.n_slots(), 0);
}

TEST(BlockTable, FailedReserveChangesNothing) {
  auto pool = KvPool::create(small_geometry(), 2);
  ASSERT_TRUE(pool);
  KvPool& p = **pool;
  BlockTable t(4);
  ASSERT_TRUE(t.reserve(p, 4));
  auto r = t.reserve(p, 9);  // would need 2 more blocks, only 1 free
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("kv cache full"), std::string::npos);
  EXPECT_EQ(t.blocks().size(), 1u);
  EXPECT_EQ(p.n_free(), 1u);
  t.release(p);
}

}  // namespace
}  // namespace clm
