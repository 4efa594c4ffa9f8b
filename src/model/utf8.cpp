#include "model/utf8.h"

namespace clm {

namespace {

// Valid range of the second byte for a lead byte (the first continuation byte
// is restricted to rule out overlong forms, surrogates and values > U+10FFFF).
struct LeadInfo {
  uint32_t len;
  uint8_t lo;
  uint8_t hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes starting at pos form a well-formed (possibly truncated)
// prefix of a sequence; `complete` says whether the whole sequence is there.
uint32_t valid_prefix(std::string_view s, std::size_t pos, bool& complete, LeadInfo& info) {
  info = lead_info(static_cast<uint8_t>(s[pos]));
  complete = false;
  if (info.len == 0) return 0;
  uint32_t n = 1;
  for (; n < info.len && pos + n < s.size(); ++n) {
    const auto c = static_cast<uint8_t>(s[pos + n]);
    const uint8_t lo = n == 1 ? info.lo : 0x80;
    const uint8_t hi = n == 1 ? info.hi : 0xBF;
    if (c < lo || c > hi) return n;
  }
  complete = n == info.len;
  return n;
}

}  // namespace

Utf8Char utf8_decode_at(std::string_view s, std::size_t pos) {
  bool complete = false;
  LeadInfo info{};
  const uint32_t n = valid_prefix(s, pos, complete, info);
  if (!complete) return {kReplacementChar, 1};
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (n == 1) return {b0, 1};
  uint32_t cp = b0 & (0x7Fu >> n);
  for (uint32_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3Fu);
  return {cp, n};
}

std::vector<CodePoint> utf8_decode(std::string_view s) {
  std::vector<CodePoint> out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    const Utf8Char c = utf8_decode_at(s, pos);
    out.push_back({c.cp, static_cast<uint32_t>(pos), c.len});
    pos += c.len;
  }
  return out;
}

bool utf8_is_valid(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const Utf8Char c = utf8_decode_at(s, pos);
    // Decoding turns each bad byte into a one-byte U+FFFD; the real
    // character takes three.
    if (c.cp == kReplacementChar && c.len == 1) return false;
    pos += c.len;
  }
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

std::string utf8_sanitize(std::string_view bytes, bool final, std::size_t* held) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    bool complete = false;
    LeadInfo info{};
    const uint32_t n = valid_prefix(bytes, pos, complete, info);
    if (complete) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else if (pos + n == bytes.size() && n > 0 && !final) {
      break;  // a well-formed start that later bytes may complete
    } else {
      // One U+FFFD per maximal ill-formed subpart.
      utf8_append(out, kReplacementChar);
      pos += n == 0 ? 1 : n;
    }
  }
  if (held != nullptr) *held = bytes.size() - pos;
  return out;
}

}  // namespace clm
