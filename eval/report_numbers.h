// How the evaluation reports print numbers: KL-sized values in scientific
// notation (inf where a distribution gave a token no mass), shares as
// percentages, anything else through a printf format.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace clm {

inline std::string format(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

inline std::string sci(double x) { return std::isfinite(x) ? format("%.2e", x) : "inf"; }
inline std::string pct(double x) { return format("%.1f%%", 100.0 * x); }

}  // namespace clm
