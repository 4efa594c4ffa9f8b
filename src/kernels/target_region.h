// CLM_TARGET_BEGIN("avx2,fma") ... CLM_TARGET_END: the functions between
// them are compiled for those instruction sets (as if by -mavx2 -mfma) and
// the rest of the file for the baseline, so that one binary carries every
// SIMD path and picks one at run time (cpu_features.h). GCC spells this
// `#pragma GCC target`; clang, which does not know that pragma, applies the
// target attribute to each function in the region.
#pragma once

#define CLM_PRAGMA(text) _Pragma(#text)

#if defined(__clang__)
#define CLM_TARGET_BEGIN(features) \
  CLM_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define CLM_TARGET_END _Pragma("clang attribute pop")
#else
#define CLM_TARGET_BEGIN(features) _Pragma("GCC push_options") CLM_PRAGMA(GCC target(features))
#define CLM_TARGET_END _Pragma("GCC pop_options")
#endif
