#include "cache/block_table.h"

#include "util/check.h"

namespace clm {

int BlockTable::capacity(const KvPool& pool) const {
  return static_cast<int>(blocks_.size()) * pool.geometry().block_size;
}

Status BlockTable::reserve(KvPool& pool, int n) {
  block_size_ = pool.geometry().block_size;
  const int need_slots = n_slots() + n - capacity(pool);
  if (need_slots <= 0) return {};
  const std::size_t need_blocks = static_cast<std::size_t>((need_slots + block_size_ - 1) / block_size_);
  if (need_blocks > pool.n_free())
    return fail("kv cache full: need " + std::to_string(need_blocks) + " more blocks, " +
                std::to_string(pool.n_free()) + " free");
  for (std::size_t i = 0; i < need_blocks; ++i) {
    const BlockId id = pool.allocate();
    CLM_CHECK(id != kNoBlock, "free count said a block was available");
    blocks_.push_back(id);
    block_ptrs_.push_back(pool.block_data(id));
  }
  return {};
}

int32_t BlockTable::append(int32_t pos) {
  CLM_CHECK(static_cast<std::size_t>(n_slots()) < blocks_.size() * static_cast<std::size_t>(block_size_),
            "append without reserved room");
  positions_.push_back(pos);
  return n_slots() - 1;
}

void BlockTable::release(KvPool& pool) {
  for (BlockId id : blocks_) pool.release(id);
  blocks_.clear();
  block_ptrs_.clear();
  positions_.clear();
}

}  // namespace clm
