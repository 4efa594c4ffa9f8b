#include "util/float_decimal.h"

#include <charconv>
#include <cmath>

namespace clm {

double as_shortest_decimal(float x) {
  if (!std::isfinite(x)) return static_cast<double>(x);
  char text[32];
  // std::to_chars with no precision writes the shortest decimal that
  // std::from_chars reads back as x.
  const auto written = std::to_chars(text, text + sizeof text, x);
  double d = 0.0;
  const auto read = std::from_chars(text, written.ptr, d);
  // Read as a double and narrowed, the decimal rounds twice; should that
  // ever land on another float, the exact widening is the safe answer.
  if (written.ec != std::errc() || read.ec != std::errc() || static_cast<float>(d) != x) return static_cast<double>(x);
  return d;
}

}  // namespace clm
