// CLMCACHE_TEST_KERNELS=PATH (scalar, avx2, avx512, avx512vnni, neon, neondot) runs a test
// binary's kernels on that path, as `--kernels` does for the CLI, so that the
// model-level bitwise and golden tests (which run on the active path) can be
// run once per path the CPU has; tests that iterate the paths themselves
// still visit every one. Set before main, as `--kernels` is set before any
// engine exists. A name the CPU cannot run ends the binary before any test
// rather than testing another path than the one asked for.
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu_features.h"

namespace {

const bool kForced = [] {
  const char* name = std::getenv("CLMCACHE_TEST_KERNELS");
  if (name == nullptr || *name == '\0') return false;
  const auto path = clm::parse_kernel_path(name);
  if (!path || !clm::kernel_path_supported(*path)) {
    std::fprintf(stderr, "CLMCACHE_TEST_KERNELS=%s: not a kernel path this CPU runs (its widest is %s)\n", name,
                 clm::kernel_path_name(clm::best_kernel_path()).data());
    std::exit(2);
  }
  clm::set_kernel_path(*path);
  std::fprintf(stderr, "kernels forced to %s by CLMCACHE_TEST_KERNELS\n", name);
  return true;
}();

}  // namespace
