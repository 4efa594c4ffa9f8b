// How much slower than a native build this test process runs. Tests that
// set a socket timeout or bound a duration multiply by it, so that their
// deadlines keep the same margin where every instruction is emulated (a
// cross build's tests under qemu set CLMCACHE_TEST_TIME_SCALE through ctest;
// tests/CMakeLists.txt). What a test asserts about the order of events and
// the ratios between its durations does not change.
#pragma once

#include <cstdlib>
#include <string>

namespace clm::test {

inline double time_scale() {
  const char* text = std::getenv("CLMCACHE_TEST_TIME_SCALE");
  if (text == nullptr || *text == '\0') return 1.0;
  const double scale = std::strtod(text, nullptr);
  return scale >= 1.0 ? scale : 1.0;
}

}  // namespace clm::test
