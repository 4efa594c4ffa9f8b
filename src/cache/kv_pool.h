// KvPool: one arena of fixed-size physical KV blocks (DESIGN.md). A block id
// indexes the K/V bytes in the arena and the block's refcount; the pool
// knows nothing of sequences, requests or cache policy. A block is free (on
// the free stack), referenced (refcount > 0), or idle (refcount 0 but kept
// by its owner, e.g. as a cached prefix block). All operations are O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/kv_geometry.h"
#include "util/error.h"
#include "util/huge_page_region.h"

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

  // A free block with refcount 1, or kNoBlock when the free stack is empty.
  BlockId allocate();
  // Adds a reference to a referenced or idle block (never a free one).
  void retain(BlockId id);
  // Drops one reference and returns how many remain. A block at zero is
  // idle until its owner frees it or retains it again.
  int release(BlockId id);
  // Returns an idle block to the free stack.
  void free(BlockId id);
  int refcount(BlockId id) const { return refcount_.at(static_cast<std::size_t>(id)); }
  bool is_free(BlockId id) const { return on_free_stack_.at(static_cast<std::size_t>(id)) != 0; }
  // Copies the K/V bytes of one block into another.
  void copy_block(BlockId from, BlockId to);

  std::byte* block_data(BlockId id) const {
    return arena_.data() + static_cast<std::size_t>(id) * geometry_.block_bytes();
  }

 private:
  KvPool() = default;

  KvGeometry geometry_;
  HugePageRegion arena_;
  std::vector<int32_t> refcount_;
  std::vector<uint8_t> on_free_stack_;
  std::vector<BlockId> free_;  // stack of free ids
};

}  // namespace clm
