// CLM_CHECK guards internal invariants (bugs, not bad input): on failure it
// prints where and why, then aborts. Bad input is reported with Result.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CLM_CHECK(cond, msg)                                                              \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "clmcache: internal error at %s:%d: %s (%s)\n", __FILE__, __LINE__, \
                   (msg), #cond);                                                         \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
