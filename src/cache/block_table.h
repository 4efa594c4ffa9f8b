// BlockTable: one sequence's ordered list of KV blocks and the position held
// by each of its slots (slot i lives in block i / block_size). It hands the
// forward pass a KvSeqView; it holds one pool reference per block.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/kv_pool.h"
#include "model/kv_view.h"
#include "util/error.h"

namespace clm {

class BlockTable {
 public:
  BlockTable() = default;
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;
  BlockTable(BlockTable&&) = default;
  BlockTable& operator=(BlockTable&&) = default;

  int n_slots() const { return static_cast<int>(positions_.size()); }
  const std::vector<BlockId>& blocks() const { return blocks_; }
  const std::vector<int32_t>& positions() const { return positions_; }

  // Makes room for n more slots, allocating blocks from the pool. Fails,
  // changing nothing, when the pool has too few free blocks.
  Status reserve(KvPool& pool, int n);
  // Appends a slot holding `pos` (room must have been reserved); returns it.
  int32_t append(int32_t pos);
  // Returns every block reference to the pool and empties the table.
  void release(KvPool& pool);

  // Valid until the table changes.
  KvSeqView view() const { return {block_ptrs_, positions_}; }

 private:
  int capacity(const KvPool& pool) const;

  std::vector<BlockId> blocks_;
  std::vector<std::byte*> block_ptrs_;  // pool addresses of blocks_, for the view
  std::vector<int32_t> positions_;
  int block_size_ = 0;
};

}  // namespace clm
