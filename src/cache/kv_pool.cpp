#include "cache/kv_pool.h"

#include "util/check.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace clm {

std::size_t KvPool::blocks_for_bytes(const KvGeometry& geometry, std::size_t memory_bytes) {
  const std::size_t per_block = geometry.block_bytes();
  return per_block == 0 ? 1 : std::max<std::size_t>(1, memory_bytes / per_block);
}

Result<std::unique_ptr<KvPool>> KvPool::create(const KvGeometry& geometry, std::size_t n_blocks) {
  if (geometry.n_layers <= 0 || geometry.n_kv_heads <= 0 || geometry.head_dim <= 0 || geometry.block_size <= 0)
    return fail("kv pool: invalid geometry");
  if (n_blocks == 0 || n_blocks > (1u << 30)) return fail("kv pool: block count out of range");
  const std::size_t bytes = geometry.block_bytes() * n_blocks;
  if (bytes / n_blocks != geometry.block_bytes()) return fail("kv pool: size overflows");
  // Anonymous memory reads as zero, so a slot read before being written is a
  // well-defined 0, and its pages are only committed when first written: a
  // large --kv-memory-mb costs no start-up time and no resident memory until
  // blocks fill. Huge pages keep attention's walk over many blocks off the
  // page tables.
  auto arena = HugePageRegion::allocate(bytes);
  if (!arena)
    return fail("kv pool: cannot allocate " + std::to_string(bytes >> 20) + " MiB for " +
                std::to_string(n_blocks) + " blocks: " + arena.error().message);
  std::unique_ptr<KvPool> pool(new KvPool());
  pool->geometry_ = geometry;
  pool->arena_ = std::move(*arena);
  pool->refcount_.assign(n_blocks, 0);
  pool->on_free_stack_.assign(n_blocks, 1);
  pool->free_.reserve(n_blocks);
  // Stack order: low ids are handed out first.
  for (std::size_t i = n_blocks; i-- > 0;) pool->free_.push_back(static_cast<BlockId>(i));
  return pool;
}

BlockId KvPool::allocate() {
  if (free_.empty()) return kNoBlock;
  const BlockId id = free_.back();
  free_.pop_back();
  refcount_[static_cast<std::size_t>(id)] = 1;
  on_free_stack_[static_cast<std::size_t>(id)] = 0;
  return id;
}

void KvPool::retain(BlockId id) {
  CLM_CHECK(!is_free(id), "kv pool: retain of a free block");
  ++refcount_[static_cast<std::size_t>(id)];
}

int KvPool::release(BlockId id) {
  int32_t& rc = refcount_.at(static_cast<std::size_t>(id));
  CLM_CHECK(rc > 0, "kv pool: release of an unreferenced block");
  return --rc;
}

void KvPool::free(BlockId id) {
  CLM_CHECK(refcount(id) == 0 && !is_free(id), "kv pool: free of a referenced or free block");
  on_free_stack_[static_cast<std::size_t>(id)] = 1;
  free_.push_back(id);
}

void KvPool::copy_block(BlockId from, BlockId to) {
  std::memcpy(block_data(to), block_data(from), geometry_.block_bytes());
}

}  // namespace clm
