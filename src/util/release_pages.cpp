#include "util/release_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace clm {

std::size_t release_pages(const std::byte* data, std::size_t size) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + size) / page * page;
  if (last <= first) return 0;
  // Advice only: where the kernel refuses, the memory simply stays.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return static_cast<std::size_t>(last - first);
}

}  // namespace clm
