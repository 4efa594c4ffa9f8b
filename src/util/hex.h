// A 64-bit value as 16 lowercase hex digits, zero-padded: how block keys,
// fingerprints and file names spell it everywhere.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace clm {

inline std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace clm
