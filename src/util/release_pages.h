// Gives the memory behind a byte range back to the system: every whole page
// inside it is dropped from this process (madvise MADV_DONTNEED). A private
// anonymous page then reads as zero, a mapped file page as the file again.
// The partial pages at either end are kept, since they hold bytes outside the
// range. Returns the bytes released.
#pragma once

#include <cstddef>

namespace clm {

std::size_t release_pages(const std::byte* data, std::size_t size);

}  // namespace clm
