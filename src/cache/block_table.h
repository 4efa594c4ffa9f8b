// BlockTable: one sequence's ordered list of KV blocks with the token and
// position held by each of its slots (slot i lives in block i / block_size).
// It hands the forward pass a KvSeqView. Each listed block carries one pool
// reference owned by the table.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/kv_pool.h"
#include "model/kv_view.h"
#include "util/error.h"

namespace clm {

class BlockTable {
 public:
  explicit BlockTable(int block_size = 32) : block_size_(block_size) {}
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;
  BlockTable(BlockTable&&) = default;
  BlockTable& operator=(BlockTable&&) = default;

  int block_size() const { return block_size_; }
  int n_slots() const { return static_cast<int>(positions_.size()); }
  int capacity() const { return static_cast<int>(blocks_.size()) * block_size_; }
  const std::vector<BlockId>& blocks() const { return blocks_; }
  const std::vector<int32_t>& positions() const { return positions_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Tokens of block b (fewer than block_size for a partial last block).
  std::span<const int32_t> block_tokens(std::size_t b) const;

  // Unmanaged use (no prefix cache): makes room for n more slots with fresh
  // blocks from the pool. Fails, changing nothing, if too few are free.
  Status reserve(KvPool& pool, int n);
  // Unmanaged use: drops every reference; blocks reaching zero are freed.
  void release(KvPool& pool);

  // Managed use: the caller holds the reference for `id`.
  void push_block(BlockId id, std::byte* data);
  void replace_block(std::size_t index, BlockId id, std::byte* data);
  // Appends a slot (room must exist) holding `token` at `pos`; returns it.
  // pos may be kEmptySlot: the slot is reserved for `token`, its K/V not
  // written yet, and attention skips it until set_position() fills it.
  int32_t append(int32_t token, int32_t pos);
  // Gives an empty slot its position (its K/V is being written now).
  void set_position(int32_t slot, int32_t pos);
  // Gives a filled slot another position (its K was re-rotated to it).
  void move_position(int32_t slot, int32_t pos);
  // Forgets all blocks and slots without touching the pool.
  void clear();
  // Removes block b and its slots (a hole: later slots move down a block and
  // keep their positions) without touching the pool; the caller holds the
  // reference it drops. Block b must be full.
  void erase_block(std::size_t b);

  // Valid until the table changes.
  KvSeqView view() const { return {block_ptrs_, positions_}; }

 private:
  int block_size_;
  std::vector<BlockId> blocks_;
  std::vector<std::byte*> block_ptrs_;  // pool addresses of blocks_, for the view
  std::vector<int32_t> positions_;
  std::vector<int32_t> tokens_;
};

}  // namespace clm
