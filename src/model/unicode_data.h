// Unicode character classes of a code point, as regex-based pre-tokenizers
// see them: \p{L}, \p{N}, \p{P}, \p{S}, \p{M}, \p{Z}, \p{C} and \s (the
// White_Space property). Tables are generated; lookups never allocate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clm {

namespace ucat {
inline constexpr uint8_t kLetter = 1 << 0;
inline constexpr uint8_t kNumber = 1 << 1;
inline constexpr uint8_t kPunctuation = 1 << 2;
inline constexpr uint8_t kSymbol = 1 << 3;
inline constexpr uint8_t kMark = 1 << 4;
inline constexpr uint8_t kSeparator = 1 << 5;
inline constexpr uint8_t kOther = 1 << 6;  // control, format, private use, surrogate
inline constexpr uint8_t kWhitespace = 1 << 7;
}  // namespace ucat

// Flags of a code point; 0 for unassigned code points and anything past U+10FFFF.
uint8_t unicode_flags(uint32_t cp);

inline bool is_letter(uint32_t cp) { return (unicode_flags(cp) & ucat::kLetter) != 0; }
inline bool is_number(uint32_t cp) { return (unicode_flags(cp) & ucat::kNumber) != 0; }
inline bool is_punctuation(uint32_t cp) { return (unicode_flags(cp) & ucat::kPunctuation) != 0; }
inline bool is_whitespace(uint32_t cp) { return (unicode_flags(cp) & ucat::kWhitespace) != 0; }

namespace detail {
struct UnicodeRange {
  uint32_t first;
  uint32_t last;
  uint8_t flags;
};
extern const UnicodeRange kUnicodeRanges[];
extern const std::size_t kUnicodeRangeCount;
}  // namespace detail

}  // namespace clm
