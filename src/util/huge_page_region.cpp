#include "util/huge_page_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace clm {

Result<HugePageRegion> HugePageRegion::allocate(std::size_t bytes) {
  HugePageRegion region;
  if (bytes == 0) return region;
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // mmap only promises 4 KiB alignment: over-allocate one huge page and give
  // back the unaligned head and tail.
  const std::size_t span = rounded + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return fail("cannot allocate " + std::to_string(rounded >> 20) + " MiB: " + std::strerror(errno));
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) ::munmap(raw, aligned - base);
  const std::uintptr_t end = base + span, used_end = aligned + rounded;
  if (end > used_end) ::munmap(reinterpret_cast<void*>(used_end), end - used_end);
  region.data_ = reinterpret_cast<std::byte*>(aligned);
  region.size_ = rounded;
  (void)::madvise(region.data_, rounded, MADV_HUGEPAGE);
  return region;
}

Status HugePageRegion::make_read_only() {
  if (data_ != nullptr && ::mprotect(data_, size_, PROT_READ) != 0)
    return fail(std::string("cannot write-protect memory: ") + std::strerror(errno));
  return {};
}

HugePageRegion& HugePageRegion::operator=(HugePageRegion&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

HugePageRegion::~HugePageRegion() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace clm
