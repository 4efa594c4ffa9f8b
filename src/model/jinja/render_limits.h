// Bounds on one rendering, so that no template (from a model file or a user)
// can loop, recurse or allocate without end: past any of them rendering
// stops with an error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clm::jinja {

struct RenderLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;  // the output, and any one string or list
  // All loops together; also the most items one list may hold.
  uint64_t max_loop_iterations = 1'000'000;
  int max_call_depth = 64;  // macro calls inside macro calls
  // Work: one unit per evaluated node plus one per byte or item each new
  // string or list holds, and one per element that equality, `in`,
  // `unique`, tojson or display walk. A billion is about a second of copying.
  uint64_t max_work = 1'000'000'000;
  // Wall-clock time, whatever the work is spent on.
  double max_seconds = 1.0;
};

}  // namespace clm::jinja
