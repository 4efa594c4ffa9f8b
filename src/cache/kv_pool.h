// KvPool: one arena of fixed-size physical KV blocks (DESIGN.md). A block id
// indexes both the K/V bytes in the arena and a small refcount; the pool
// knows nothing of sequences or requests. Allocation and release are O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/kv_geometry.h"
#include "util/error.h"

namespace clm {

using BlockId = int32_t;
constexpr BlockId kNoBlock = -1;

class KvPool {
 public:
  // A pool of n_blocks blocks of the given geometry. Fails if the arena
  // cannot be allocated.
  static Result<std::unique_ptr<KvPool>> create(const KvGeometry& geometry, std::size_t n_blocks);
  // Blocks that fit in memory_bytes (at least one).
  static std::size_t blocks_for_bytes(const KvGeometry& geometry, std::size_t memory_bytes);

  const KvGeometry& geometry() const { return geometry_; }
  std::size_t n_blocks() const { return refcount_.size(); }
  std::size_t n_free() const { return free_.size(); }
  std::size_t n_used() const { return n_blocks() - n_free(); }
  std::size_t arena_bytes() const { return geometry_.block_bytes() * n_blocks(); }

  // A free block with refcount 1, or kNoBlock when the pool is exhausted.
  BlockId allocate();
  void retain(BlockId id);
  // Drops one reference; the block returns to the free list at zero.
  void release(BlockId id);
  int refcount(BlockId id) const { return refcount_.at(static_cast<std::size_t>(id)); }

  std::byte* block_data(BlockId id) const {
    return arena_.get() + static_cast<std::size_t>(id) * geometry_.block_bytes();
  }

 private:
  KvPool() = default;

  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  KvGeometry geometry_;
  std::unique_ptr<std::byte, FreeDeleter> arena_;
  std::vector<int32_t> refcount_;
  std::vector<BlockId> free_;  // stack of free ids
};

}  // namespace clm
