#include "support/float_text.h"

#include <charconv>
#include <string>

namespace clm::test {

namespace {

template <class T>
std::string shortest(T x) {
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, x);
  return std::string(text, r.ptr);
}

}  // namespace

bool written_as_float(double value) { return shortest(value) == shortest(static_cast<float>(value)); }

}  // namespace clm::test
