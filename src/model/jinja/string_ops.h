// String operations of the template language, on UTF-8 text. Whitespace is
// what JavaScript's \s and trim() see (Hugging Face's renderer is the
// reference); letters change case in ASCII only. Counting and slicing go by
// code points, as Python does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clm::jinja {

bool is_space(uint32_t cp);
// Bytes taken by the whitespace character at `pos`, 0 when it is not one.
std::size_t space_length_at(std::string_view s, std::size_t pos);
// Bytes taken by the whitespace characters that end `s` (before `end`).
std::size_t trailing_space_length(std::string_view s);

// Python's strip/lstrip/rstrip: without `chars` whitespace goes, with them
// any of those characters.
std::string_view strip_space(std::string_view s, bool left, bool right);
std::string strip_chars(std::string_view s, std::string_view chars, bool left, bool right);

std::size_t code_point_count(std::string_view s);
// The string's characters, each as its own UTF-8 substring.
std::vector<std::string_view> split_code_points(std::string_view s);

std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
// Upper-cases a letter that starts a word (the rest is kept as it is).
std::string title_case(std::string_view s);
// Upper-cases the first character (the rest is kept as it is).
std::string capitalize_first(std::string_view s);

// Python's str.split(sep, maxsplit) with sep given (not empty) and without
// (runs of whitespace separate, leading whitespace is dropped); maxsplit < 0
// means no limit.
std::vector<std::string> split_on(std::string_view s, std::string_view sep, int64_t maxsplit);
std::vector<std::string> split_on_space(std::string_view s, int64_t maxsplit);

// Python's str.replace; count < 0 replaces all. Fails (returns false) when
// the result would exceed max_bytes.
bool replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count,
                 std::size_t max_bytes, std::string& out);

// A number as JavaScript's Number.prototype.toString writes it ("0.1",
// "1e+21", "5").
std::string js_number_to_string(double x);
// A float as the template prints it: integral values keep one decimal ("2.0").
std::string float_to_display(double x);

}  // namespace clm::jinja
