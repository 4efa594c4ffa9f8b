#include "model/jinja/string_ops.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "model/utf8.h"

namespace clm::jinja {

namespace {

bool is_ascii_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

char ascii_to_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
char ascii_to_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Start of the character that ends at `end` (exclusive): back over at most
// three continuation bytes.
std::size_t previous_char_start(std::string_view s, std::size_t end) {
  std::size_t start = end - 1;
  for (int i = 0; i < 3 && start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80; ++i) --start;
  // A stray continuation byte is a character of its own (decoded as U+FFFD).
  if (utf8_decode_at(s, start).len != end - start) return end - 1;
  return start;
}

bool contains_code_point(const std::vector<std::string_view>& set, std::string_view c) {
  for (auto x : set) {
    if (x == c) return true;
  }
  return false;
}

}  // namespace

bool is_space(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::size_t space_length_at(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return 0;
  const auto b = static_cast<uint8_t>(s[pos]);
  if (b < 0x80) return is_space(b) ? 1 : 0;
  const Utf8Char c = utf8_decode_at(s, pos);
  return is_space(c.cp) ? c.len : 0;
}

std::size_t trailing_space_length(std::string_view s) {
  std::size_t end = s.size();
  while (end > 0) {
    const std::size_t start = previous_char_start(s, end);
    if (space_length_at(s, start) != end - start) break;
    end = start;
  }
  return s.size() - end;
}

std::string_view strip_space(std::string_view s, bool left, bool right) {
  if (left) {
    std::size_t pos = 0;
    while (std::size_t n = space_length_at(s, pos)) pos += n;
    s.remove_prefix(pos);
  }
  if (right) s.remove_suffix(trailing_space_length(s));
  return s;
}

std::string strip_chars(std::string_view s, std::string_view chars, bool left, bool right) {
  const std::vector<std::string_view> set = split_code_points(chars);
  std::vector<std::string_view> cps = split_code_points(s);
  std::size_t first = 0;
  std::size_t last = cps.size();
  if (left) {
    while (first < last && contains_code_point(set, cps[first])) ++first;
  }
  if (right) {
    while (last > first && contains_code_point(set, cps[last - 1])) --last;
  }
  if (first == last) return {};
  const auto begin = static_cast<std::size_t>(cps[first].data() - s.data());
  const auto end = static_cast<std::size_t>(cps[last - 1].data() - s.data()) + cps[last - 1].size();
  return std::string(s.substr(begin, end - begin));
}

std::size_t code_point_count(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t pos = 0; pos < s.size(); pos += utf8_decode_at(s, pos).len) ++n;
  return n;
}

std::vector<std::string_view> split_code_points(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    const uint32_t len = utf8_decode_at(s, pos).len;
    out.push_back(s.substr(pos, len));
    pos += len;
  }
  return out;
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_to_upper(c);
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_to_lower(c);
  return out;
}

std::string title_case(std::string_view s) {
  std::string out(s);
  bool in_word = false;
  for (char& c : out) {
    const bool word = is_ascii_word(c);
    if (word && !in_word) c = ascii_to_upper(c);
    in_word = word;
  }
  return out;
}

std::string capitalize_first(std::string_view s) {
  std::string out(s);
  if (!out.empty()) out[0] = ascii_to_upper(out[0]);
  return out;
}

std::vector<std::string> split_on(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const std::size_t hit = s.find(sep, pos);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> split_on_space(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    while (std::size_t n = space_length_at(s, pos)) pos += n;
    if (pos >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      out.emplace_back(s.substr(pos));  // the rest, trailing whitespace included
      break;
    }
    const std::size_t start = pos;
    while (pos < s.size() && space_length_at(s, pos) == 0) pos += utf8_decode_at(s, pos).len;
    out.emplace_back(s.substr(start, pos - start));
  }
  return out;
}

bool replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count,
                 std::size_t max_bytes, std::string& out) {
  out.clear();
  auto append = [&](std::string_view piece) {
    if (out.size() + piece.size() > max_bytes) return false;
    out += piece;
    return true;
  };
  int64_t left = count < 0 ? INT64_MAX : count;
  if (from.empty()) {
    // Python inserts `to` at every character boundary, both ends included.
    for (std::string_view c : split_code_points(s)) {
      if (left > 0) {
        if (!append(to)) return false;
        --left;
      }
      if (!append(c)) return false;
    }
    return left > 0 ? append(to) : true;
  }
  std::size_t pos = 0;
  while (left > 0) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    if (!append(s.substr(pos, hit - pos)) || !append(to)) return false;
    pos = hit + from.size();
    --left;
  }
  return append(s.substr(pos));
}

std::string js_number_to_string(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  if (x == 0) return "0";
  // The shortest digits that read back as x, and the decimal exponent.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(x), std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
  const std::size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits += sci.substr(2, e - 2);
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // the point sits after n digits
  const auto un = static_cast<std::size_t>(n);
  std::string out(x < 0 ? "-" : "");
  if (k <= n && n <= 21) {
    out += digits;
    out.append(un - digits.size(), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, un);
    out += '.';
    out.append(digits, un);
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += n - 1 >= 0 ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

std::string float_to_display(double x) {
  if (x == 0 && std::signbit(x)) return "-0.0";
  if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 1e21) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, 0);
    std::string out(buf, res.ptr);
    out += ".0";
    return out;
  }
  return js_number_to_string(x);
}

}  // namespace clm::jinja
