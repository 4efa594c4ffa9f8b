// Private anonymous memory that starts on a 2 MiB boundary and is advised
// for transparent huge pages, so that streaming through it (weights, a
// bandwidth probe) walks few page-table entries. The advice is best effort:
// where THP is off the region still works on small pages. Move-only.
#pragma once

#include <cstddef>
#include <utility>

#include "util/error.h"

namespace clm {

class HugePageRegion {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  // At least `bytes` of zeroed, writable memory.
  static Result<HugePageRegion> allocate(std::size_t bytes);

  HugePageRegion() = default;
  HugePageRegion(HugePageRegion&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  HugePageRegion& operator=(HugePageRegion&& other) noexcept;
  HugePageRegion(const HugePageRegion&) = delete;
  HugePageRegion& operator=(const HugePageRegion&) = delete;
  ~HugePageRegion();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }  // rounded up to whole huge pages
  // From now on any write to the region faults.
  Status make_read_only();

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace clm
