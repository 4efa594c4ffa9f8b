#include "model/pre_tokenizer.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "model/unicode_data.h"
#include "model/utf8.h"

namespace clm {

namespace {

struct CpRange {
  uint32_t first;
  uint32_t last;
};

bool in_ranges(uint32_t cp, const CpRange* ranges, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (cp >= ranges[i].first && cp <= ranges[i].last) return true;
  }
  return false;
}

// The letter class of the deepseek-llm split pattern: Latin, Greek, Cyrillic,
// Armenian, Georgian, Cherokee and a few more, spelled out as ranges.
constexpr CpRange kDeepseekLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

// ASCII and full-width punctuation, curly quotes and CJK full stops.
constexpr CpRange kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};

// CJK ideographs, everything from U+0800 up to them, and Hangul.
constexpr CpRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

// The decoded text one stage works on. A matcher looks at the fragment
// [i, end) only: lookahead and `$` stop at the fragment's end, as they do
// when a regex runs over each piece left by the previous split.
class Text {
 public:
  explicit Text(std::string_view s) : cps_(utf8_decode(s)) {
    flags_.reserve(cps_.size());
    for (const auto& c : cps_) flags_.push_back(unicode_flags(c.cp));
  }
  std::size_t size() const { return cps_.size(); }
  uint32_t cp(std::size_t i) const { return cps_[i].cp; }
  uint32_t offset(std::size_t i) const { return i < cps_.size() ? cps_[i].offset : end_offset(); }
  uint32_t end_offset() const { return cps_.empty() ? 0 : cps_.back().offset + cps_.back().len; }

  bool letter(std::size_t i) const { return (flags_[i] & ucat::kLetter) != 0; }
  bool number(std::size_t i) const { return (flags_[i] & ucat::kNumber) != 0; }
  bool punct(std::size_t i) const { return (flags_[i] & ucat::kPunctuation) != 0; }
  bool space(std::size_t i) const { return (flags_[i] & ucat::kWhitespace) != 0; }
  // [^\s\p{L}\p{N}]
  bool other(std::size_t i) const { return (flags_[i] & (ucat::kWhitespace | ucat::kLetter | ucat::kNumber)) == 0; }
  bool newline(std::size_t i) const { return cps_[i].cp == '\r' || cps_[i].cp == '\n'; }

  template <class Pred>
  std::size_t run(std::size_t i, std::size_t end, Pred pred) const {
    while (i < end && pred(i)) ++i;
    return i;
  }

 private:
  std::vector<CodePoint> cps_;
  std::vector<uint8_t> flags_;
};

using Matcher = std::size_t (*)(const Text&, std::size_t i, std::size_t end);

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d, optionally ignoring ASCII case.
std::size_t match_contraction(const Text& t, std::size_t i, std::size_t end, bool any_case) {
  if (t.cp(i) != '\'' || i + 1 >= end) return 0;
  auto c = [&](std::size_t k) { return any_case ? ascii_lower(t.cp(k)) : t.cp(k); };
  const uint32_t a = c(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= end) return 0;
  const uint32_t b = c(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S) then, if allowed, \s+ : a whitespace run leaves its last
// character to the word that follows it.
std::size_t match_trailing_space(const Text& t, std::size_t i, std::size_t end, bool plain_run) {
  if (!t.space(i)) return 0;
  const std::size_t k = t.run(i, end, [&](std::size_t j) { return t.space(j); });
  if (k == end) return k - i;
  if (k - 1 > i) return k - 1 - i;
  return plain_run ? k - i : 0;
}

std::size_t gpt2_common(const Text& t, std::size_t i, std::size_t end, bool plain_run) {
  if (std::size_t n = match_contraction(t, i, end, false)) return n;
  const std::size_t j = (t.cp(i) == ' ' && i + 1 < end) ? i + 1 : i;
  if (t.letter(j)) return t.run(j, end, [&](std::size_t k) { return t.letter(k); }) - i;
  if (t.number(j)) return t.run(j, end, [&](std::size_t k) { return t.number(k); }) - i;
  if (t.other(j)) return t.run(j, end, [&](std::size_t k) { return t.other(k); }) - i;
  return match_trailing_space(t, i, end, plain_run);
}

std::size_t match_gpt2(const Text& t, std::size_t i, std::size_t end) { return gpt2_common(t, i, end, true); }
std::size_t match_gpt2_no_run(const Text& t, std::size_t i, std::size_t end) {
  return gpt2_common(t, i, end, false);
}

std::size_t llama3_common(const Text& t, std::size_t i, std::size_t end, std::size_t max_digits) {
  if (std::size_t n = match_contraction(t, i, end, true)) return n;
  auto letters = [&](std::size_t k) { return t.letter(k); };
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!t.newline(i) && !t.letter(i) && !t.number(i) && i + 1 < end && t.letter(i + 1)) {
    return t.run(i + 1, end, letters) - i;
  }
  if (t.letter(i)) return t.run(i, end, letters) - i;
  if (t.number(i)) {
    std::size_t k = i;
    while (k < end && t.number(k) && k - i < max_digits) ++k;
    return k - i;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const std::size_t j = (t.cp(i) == ' ' && i + 1 < end) ? i + 1 : i;
  if (t.other(j)) {
    const std::size_t k = t.run(j, end, [&](std::size_t m) { return t.other(m); });
    return t.run(k, end, [&](std::size_t m) { return t.newline(m); }) - i;
  }
  if (!t.space(i)) return 0;
  // \s*[\r\n]+ : up to and including the last newline of the whitespace run.
  const std::size_t k = t.run(i, end, [&](std::size_t m) { return t.space(m); });
  for (std::size_t m = k; m > i; --m) {
    if (t.newline(m - 1)) return m - i;
  }
  return match_trailing_space(t, i, end, true);
}

std::size_t match_llama3(const Text& t, std::size_t i, std::size_t end) { return llama3_common(t, i, end, 3); }
std::size_t match_qwen2(const Text& t, std::size_t i, std::size_t end) { return llama3_common(t, i, end, 1); }

std::size_t match_newline_char(const Text& t, std::size_t i, std::size_t) { return t.newline(i) ? 1 : 0; }
std::size_t match_one_number(const Text& t, std::size_t i, std::size_t) { return t.number(i) ? 1 : 0; }
std::size_t match_numbers(const Text& t, std::size_t i, std::size_t end) {
  return t.run(i, end, [&](std::size_t k) { return t.number(k); }) - i;
}

// \s?X+ for a class X.
template <class Pred>
std::size_t match_space_then_run(const Text& t, std::size_t i, std::size_t end, Pred pred) {
  const std::size_t j = (t.space(i) && i + 1 < end && pred(i + 1)) ? i + 1 : i;
  if (!pred(j)) return 0;
  return t.run(j, end, pred) - i;
}

template <const CpRange* R, std::size_t N>
std::size_t match_range_run(const Text& t, std::size_t i, std::size_t end) {
  return t.run(i, end, [&](std::size_t k) { return in_ranges(t.cp(k), R, N); }) - i;
}

constexpr std::size_t kCjkCount = std::size(kDeepseekCjk);
constexpr auto match_cjk = match_range_run<kDeepseekCjk, kCjkCount>;

std::size_t match_ds_letters(const Text& t, std::size_t i, std::size_t end) {
  return match_space_then_run(t, i, end, [&](std::size_t k) {
    return in_ranges(t.cp(k), kDeepseekLetters, std::size(kDeepseekLetters));
  });
}
std::size_t match_ds_punct(const Text& t, std::size_t i, std::size_t end) {
  return match_space_then_run(t, i, end, [&](std::size_t k) {
    return in_ranges(t.cp(k), kDeepseekPunct, std::size(kDeepseekPunct));
  });
}
// \s+$ : whitespace that ends the fragment.
std::size_t match_final_space(const Text& t, std::size_t i, std::size_t end) {
  if (!t.space(i)) return 0;
  const std::size_t k = t.run(i, end, [&](std::size_t m) { return t.space(m); });
  return k == end ? k - i : 0;
}
std::size_t match_space_letters(const Text& t, std::size_t i, std::size_t end) {
  return match_space_then_run(t, i, end, [&](std::size_t k) { return t.letter(k); });
}
std::size_t match_space_punct(const Text& t, std::size_t i, std::size_t end) {
  return match_space_then_run(t, i, end, [&](std::size_t k) { return t.punct(k); });
}
// [\p{P}\$\+<=>\^~\|`]+
std::size_t match_falcon_punct(const Text& t, std::size_t i, std::size_t end) {
  return t.run(i, end, [&](std::size_t k) {
           const uint32_t c = t.cp(k);
           return t.punct(k) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
                  c == '~' || c == '|' || c == '`';
         }) -
         i;
}
std::size_t match_three_digits(const Text& t, std::size_t i, std::size_t end) {
  if (i + 3 > end) return 0;
  for (std::size_t k = i; k < i + 3; ++k) {
    if (t.cp(k) < '0' || t.cp(k) > '9') return 0;
  }
  return 3;
}

std::vector<Matcher> stages(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::Gpt2: return {match_gpt2};
    case PreTokenizerKind::Llama3: return {match_llama3};
    case PreTokenizerKind::Qwen2: return {match_qwen2};
    case PreTokenizerKind::DeepseekLlm:
      return {match_newline_char, match_ds_letters, match_ds_punct, match_final_space, match_cjk, match_numbers};
    case PreTokenizerKind::DeepseekCoder:
      return {match_newline_char, match_space_letters, match_space_punct, match_cjk, match_one_number};
    case PreTokenizerKind::Falcon: return {match_falcon_punct, match_gpt2_no_run, match_three_digits};
    case PreTokenizerKind::Starcoder: return {match_one_number, match_gpt2_no_run};
  }
  return {};
}

struct Span {
  std::size_t begin;
  std::size_t end;
};

}  // namespace

std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view pre) {
  using Kind = PreTokenizerKind;
  struct Entry {
    std::string_view name;
    Kind kind;
  };
  static constexpr Entry kNames[] = {
      {"", Kind::Gpt2}, {"default", Kind::Gpt2}, {"gpt-2", Kind::Gpt2}, {"gpt2", Kind::Gpt2}, {"mpt", Kind::Gpt2},
      {"olmo", Kind::Gpt2}, {"llama3", Kind::Llama3}, {"llama-v3", Kind::Llama3}, {"llama-bpe", Kind::Llama3},
      {"smaug-bpe", Kind::Llama3}, {"dbrx", Kind::Llama3}, {"qwen2", Kind::Qwen2},
      {"deepseek-llm", Kind::DeepseekLlm}, {"deepseek-coder", Kind::DeepseekCoder}, {"falcon", Kind::Falcon},
      {"starcoder", Kind::Starcoder}, {"refact", Kind::Starcoder}, {"command-r", Kind::Starcoder},
      {"smollm", Kind::Starcoder}, {"codeshell", Kind::Starcoder},
  };
  for (const auto& e : kNames) {
    if (e.name == pre) return e.kind;
  }
  return std::nullopt;
}

std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text) {
  const Text t(text);
  std::vector<Span> pieces;
  if (t.size() > 0) pieces.push_back({0, t.size()});
  for (Matcher match : stages(kind)) {
    std::vector<Span> next;
    next.reserve(pieces.size() * 2);
    for (const Span& p : pieces) {
      std::size_t gap = p.begin;
      for (std::size_t i = p.begin; i < p.end;) {
        const std::size_t n = match(t, i, p.end);
        if (n == 0) {
          ++i;
          continue;
        }
        if (gap < i) next.push_back({gap, i});
        next.push_back({i, i + n});
        i += n;
        gap = i;
      }
      if (gap < p.end) next.push_back({gap, p.end});
    }
    pieces = std::move(next);
  }
  std::vector<std::string_view> words;
  words.reserve(pieces.size());
  for (const Span& p : pieces) {
    const uint32_t b = t.offset(p.begin);
    const uint32_t e = t.offset(p.end);
    words.push_back(text.substr(b, e - b));
  }
  return words;
}

}  // namespace clm
