// Counts heap allocations: this test binary replaces the global operator new
// (every form), so any allocation made while counting, on any thread, is seen.
#pragma once

#include <cstddef>

namespace clm::test {

void start_counting_allocations();
// The allocations since start_counting_allocations(); counting stops.
std::size_t stop_counting_allocations();

}  // namespace clm::test
