// UTF-8 decoding and encoding. Decoding is total: a byte that does not start
// a well-formed sequence decodes as U+FFFD of length 1, so every input byte
// belongs to exactly one decoded character and byte offsets stay exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clm {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

struct Utf8Char {
  uint32_t cp = 0;
  uint32_t len = 0;  // bytes consumed, at least 1 unless at the end
};

// Decodes the character starting at byte `pos` (pos < s.size()).
Utf8Char utf8_decode_at(std::string_view s, std::size_t pos);

// A character with the byte offset it starts at.
struct CodePoint {
  uint32_t cp;
  uint32_t offset;
  uint32_t len;
};
std::vector<CodePoint> utf8_decode(std::string_view s);

// True when every byte belongs to a well-formed character (a literal
// U+FFFD is well-formed; a truncated sequence at the end is not).
bool utf8_is_valid(std::string_view s);

void utf8_append(std::string& out, uint32_t cp);
std::string utf8_encode(uint32_t cp);

// Splits `bytes` into a prefix that can be printed now and a held tail:
// the prefix has complete characters, with every ill-formed sequence
// replaced by U+FFFD; the tail (returned length) is a truncated but so far
// well-formed sequence at the very end that more bytes may complete.
// When `final` is set nothing is held: a truncated tail becomes U+FFFD.
std::string utf8_sanitize(std::string_view bytes, bool final, std::size_t* held);

}  // namespace clm
