#include "app/memory_trim.h"

#include <malloc.h>

namespace clm {

bool MemoryTrim::trim_if_due() {
  if (burst_bytes_ == 0 || freed_.load(std::memory_order_relaxed) < burst_bytes_) return false;
  freed_.store(0, std::memory_order_relaxed);
  malloc_trim(0);
  return true;
}

}  // namespace clm
