#include "cache/block_table.h"

#include <algorithm>
#include <string>

#include "util/check.h"

namespace clm {

std::span<const int32_t> BlockTable::block_tokens(std::size_t b) const {
  const std::size_t begin = b * static_cast<std::size_t>(block_size_);
  const std::size_t end = std::min(tokens_.size(), begin + static_cast<std::size_t>(block_size_));
  if (begin >= end) return {};
  return std::span<const int32_t>(tokens_).subspan(begin, end - begin);
}

Status BlockTable::reserve(KvPool& pool, int n) {
  CLM_CHECK(pool.geometry().block_size == block_size_, "block table and pool disagree on block size");
  const int need_slots = n_slots() + n - capacity();
  if (need_slots <= 0) return {};
  const std::size_t need_blocks = static_cast<std::size_t>((need_slots + block_size_ - 1) / block_size_);
  if (need_blocks > pool.n_free())
    return fail("kv cache full: need " + std::to_string(need_blocks) + " more blocks, " +
                std::to_string(pool.n_free()) + " free");
  for (std::size_t i = 0; i < need_blocks; ++i) {
    const BlockId id = pool.allocate();
    CLM_CHECK(id != kNoBlock, "free count said a block was available");
    push_block(id, pool.block_data(id));
  }
  return {};
}

void BlockTable::release(KvPool& pool) {
  for (BlockId id : blocks_)
    if (pool.release(id) == 0) pool.free(id);
  clear();
}

void BlockTable::push_block(BlockId id, std::byte* data) {
  blocks_.push_back(id);
  block_ptrs_.push_back(data);
  // The slots of the new block get their room now, so that appending a
  // token (every decode step) never reallocates; growth stays geometric.
  const std::size_t slots = static_cast<std::size_t>(capacity());
  if (positions_.capacity() < slots) {
    const std::size_t room = std::max(slots, 2 * positions_.capacity());
    positions_.reserve(room);
    tokens_.reserve(room);
  }
}

void BlockTable::replace_block(std::size_t index, BlockId id, std::byte* data) {
  blocks_.at(index) = id;
  block_ptrs_.at(index) = data;
}

int32_t BlockTable::append(int32_t token, int32_t pos) {
  CLM_CHECK(n_slots() < capacity(), "append without reserved room");
  positions_.push_back(pos);
  tokens_.push_back(token);
  return n_slots() - 1;
}

void BlockTable::set_position(int32_t slot, int32_t pos) {
  CLM_CHECK(slot >= 0 && slot < n_slots(), "set_position outside the table");
  int32_t& p = positions_[static_cast<std::size_t>(slot)];
  CLM_CHECK(p == kEmptySlot, "set_position on a filled slot");
  p = pos;
}

void BlockTable::move_position(int32_t slot, int32_t pos) {
  CLM_CHECK(slot >= 0 && slot < n_slots(), "move_position outside the table");
  int32_t& p = positions_[static_cast<std::size_t>(slot)];
  CLM_CHECK(p != kEmptySlot && pos != kEmptySlot, "move_position of an empty slot");
  p = pos;
}

void BlockTable::erase_block(std::size_t b) {
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  CLM_CHECK(b < blocks_.size() && (b + 1) * bs <= positions_.size(), "erase_block of a block that is not full");
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(b));
  block_ptrs_.erase(block_ptrs_.begin() + static_cast<std::ptrdiff_t>(b));
  const auto first = static_cast<std::ptrdiff_t>(b * bs);
  const auto last = first + static_cast<std::ptrdiff_t>(bs);
  positions_.erase(positions_.begin() + first, positions_.begin() + last);
  tokens_.erase(tokens_.begin() + first, tokens_.begin() + last);
}

void BlockTable::clear() {
  blocks_.clear();
  block_ptrs_.clear();
  positions_.clear();
  tokens_.clear();
}

}  // namespace clm
