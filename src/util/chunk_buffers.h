// Float buffers for the chunks of a parallel loop, one claimed by a chunk for
// as long as it runs. A thread pool runs at most size() chunks at once, so
// that many buffers always suffice, and they are all made before the loop:
// claiming one allocates nothing. (A thread_local buffer is made the first
// time a thread happens to run a chunk, which can be any step, since which
// thread claims which chunk is left to the threads.)
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace clm {

class ChunkBuffers {
 public:
  // Makes `count` buffers of at least `length` floats; a no-op once they exist.
  // Not while a loop holds a claim.
  void ensure(std::size_t count, std::size_t length) {
    if (buffers_.size() >= count && (buffers_.empty() || buffers_.front().size() >= length)) return;
    buffers_.assign(count, std::vector<float>(length));
    taken_ = std::make_unique<std::atomic<bool>[]>(count);
  }

  // A buffer no other running chunk holds, given back when the claim ends.
  class Claim {
   public:
    Claim(ChunkBuffers& owner, std::size_t index) : owner_(owner), index_(index) {}
    ~Claim() { owner_.taken_[index_].store(false, std::memory_order_release); }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    std::vector<float>& buffer() { return owner_.buffers_[index_]; }

   private:
    ChunkBuffers& owner_;
    std::size_t index_;
  };

  // With more concurrent claims than buffers this would spin forever; ensure()
  // with the pool's size rules that out.
  Claim claim() {
    std::size_t i = 0;
    while (taken_[i].exchange(true, std::memory_order_acquire)) i = (i + 1) % buffers_.size();
    return Claim(*this, i);
  }

 private:
  std::vector<std::vector<float>> buffers_;
  std::unique_ptr<std::atomic<bool>[]> taken_;
};

}  // namespace clm
