#include "model/unicode_data.h"

#include <algorithm>
#include <array>

namespace clm {

namespace {

// ASCII is by far the most common input; answer it from a flat table.
const std::array<uint8_t, 128>& ascii_flags() {
  static const std::array<uint8_t, 128> table = [] {
    std::array<uint8_t, 128> t{};
    for (std::size_t i = 0; i < detail::kUnicodeRangeCount; ++i) {
      const auto& r = detail::kUnicodeRanges[i];
      if (r.first >= 128) break;
      for (uint32_t cp = r.first; cp <= r.last && cp < 128; ++cp) t[cp] = r.flags;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint8_t unicode_flags(uint32_t cp) {
  if (cp < 128) return ascii_flags()[cp];
  const detail::UnicodeRange* begin = detail::kUnicodeRanges;
  const detail::UnicodeRange* end = begin + detail::kUnicodeRangeCount;
  // First range whose last code point is >= cp.
  const auto* it = std::lower_bound(begin, end, cp,
                                    [](const detail::UnicodeRange& r, uint32_t c) { return r.last < c; });
  if (it == end || it->first > cp) return 0;
  return it->flags;
}

}  // namespace clm
