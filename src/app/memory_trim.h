// Returning memory after bursts. glibc keeps the pages of freed small
// blocks (JSON trees, request bodies below its mmap threshold) in its heaps
// and rarely gives them back, so after a burst of large requests the
// server's RSS would stay at the burst's peak. The server notes the bytes
// its requests brought in; a check once a second calls malloc_trim (which
// hands free pages back to the kernel) when more than a threshold was freed
// since the last trim. So a burst is trimmed within a second of its end,
// and at most once a second while it lasts; small requests never add up to
// much, so quiet traffic costs no trimming.
#pragma once

#include <atomic>
#include <cstddef>

namespace clm {

class MemoryTrim {
 public:
  // burst_bytes 0: never trims.
  explicit MemoryTrim(std::size_t burst_bytes) : burst_bytes_(burst_bytes) {}
  // A request's buffers of about this size have been freed.
  void note_freed(std::size_t bytes) { freed_.fetch_add(bytes, std::memory_order_relaxed); }
  // Trims when a burst's worth was freed since the last trim; true if it did.
  bool trim_if_due();

 private:
  std::size_t burst_bytes_;
  std::atomic<std::size_t> freed_{0};
};

}  // namespace clm
