#include "model/jinja/lexer.h"

#include <array>
#include <utility>

#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"
#include "model/utf8.h"

namespace clm::jinja {

namespace {

// Text with the source offset of every byte, so that errors found after the
// whitespace rules still point into the template as written.
struct MappedText {
  std::string text;
  std::vector<uint32_t> origin;

  void append(const MappedText& from, std::size_t begin, std::size_t end) {
    text.append(from.text, begin, end - begin);
    origin.insert(origin.end(), from.origin.begin() + static_cast<std::ptrdiff_t>(begin),
                  from.origin.begin() + static_cast<std::ptrdiff_t>(end));
  }
  void truncate(std::size_t size) {
    text.resize(size);
    origin.resize(size);
  }
};

bool starts_with_at(std::string_view s, std::size_t pos, std::string_view prefix) {
  return s.size() >= pos && s.substr(pos).starts_with(prefix);
}

// JavaScript's line terminators (what a multiline ^ starts after).
std::size_t line_terminator_length(std::string_view s, std::size_t pos) {
  if (s[pos] == '\n' || s[pos] == '\r') return 1;
  if (starts_with_at(s, pos, "\u2028") || starts_with_at(s, pos, "\u2029")) return 3;
  return 0;
}

// lstrip_blocks: spaces and tabs that open a line go when a {%, {# (or {-)
// follows them.
MappedText strip_block_indentation(const MappedText& in) {
  MappedText out;
  const std::string_view s = in.text;
  std::size_t copied = 0;
  bool line_start = true;
  for (std::size_t pos = 0; pos < s.size();) {
    if (line_start) {
      std::size_t end = pos;
      while (end < s.size() && (s[end] == ' ' || s[end] == '\t')) ++end;
      if (starts_with_at(s, end, "{%") || starts_with_at(s, end, "{#") || starts_with_at(s, end, "{-")) {
        out.append(in, copied, pos);
        copied = end;
      }
      pos = end;
      line_start = false;
      continue;
    }
    if (const std::size_t n = line_terminator_length(s, pos)) {
      pos += n;
      line_start = true;
    } else {
      ++pos;
    }
  }
  out.append(in, copied, s.size());
  return out;
}

// trim_blocks: the newline right after %}, #} (or -}) goes.
MappedText drop_newline_after_blocks(const MappedText& in) {
  MappedText out;
  const std::string_view s = in.text;
  std::size_t copied = 0;
  for (std::size_t pos = 0; pos + 2 < s.size();) {
    if ((s[pos] == '%' || s[pos] == '#' || s[pos] == '-') && s[pos + 1] == '}' && s[pos + 2] == '\n') {
      out.append(in, copied, pos + 2);
      copied = pos + 3;
      pos += 3;
    } else {
      ++pos;
    }
  }
  out.append(in, copied, s.size());
  return out;
}

std::size_t skip_space(std::string_view s, std::size_t pos) {
  while (std::size_t n = space_length_at(s, pos)) pos += n;
  return pos;
}

// {% generation %} and {% endgeneration %} mark the assistant's text for
// training masks; they render nothing, and their "-" trims as usual.
MappedText remove_generation_markers(const MappedText& in) {
  MappedText out;
  const std::string_view s = in.text;
  std::size_t copied = 0;
  for (std::size_t pos = s.find("{%"); pos != std::string_view::npos; pos = s.find("{%", pos + 1)) {
    if (pos < copied) continue;
    std::size_t at = pos + 2;
    const bool trim_before = at < s.size() && s[at] == '-';
    if (trim_before) ++at;
    at = skip_space(s, at);
    if (starts_with_at(s, at, "endgeneration")) {
      at += 13;
    } else if (starts_with_at(s, at, "generation")) {
      at += 10;
    } else {
      continue;
    }
    at = skip_space(s, at);
    const bool trim_after = at < s.size() && s[at] == '-';
    if (trim_after) ++at;
    if (!starts_with_at(s, at, "%}")) continue;
    at += 2;
    // The whitespace right before the marker, back to the end of the last one.
    const std::size_t before = pos - trailing_space_length(s.substr(copied, pos - copied));
    const std::size_t after = skip_space(s, at);
    out.append(in, copied, trim_before ? before : pos);
    if (!trim_after) out.append(in, at, after);
    copied = after;
  }
  out.append(in, copied, s.size());
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Symbol {
  std::string_view text;
  TokenKind kind;
};

// Longer symbols before their prefixes.
constexpr std::array<Symbol, 29> kSymbols = {{
    {"{%", TokenKind::OpenStatement}, {"%}", TokenKind::CloseStatement},
    {"{{", TokenKind::OpenExpression}, {"}}", TokenKind::CloseExpression},
    {"(", TokenKind::LParen}, {")", TokenKind::RParen},
    {"{", TokenKind::LBrace}, {"}", TokenKind::RBrace},
    {"[", TokenKind::LBracket}, {"]", TokenKind::RBracket},
    {",", TokenKind::Comma}, {".", TokenKind::Dot}, {":", TokenKind::Colon}, {"|", TokenKind::Pipe},
    {"<=", TokenKind::Compare}, {">=", TokenKind::Compare}, {"==", TokenKind::Compare},
    {"!=", TokenKind::Compare}, {"<", TokenKind::Compare}, {">", TokenKind::Compare},
    {"+", TokenKind::Additive}, {"-", TokenKind::Additive}, {"~", TokenKind::Additive},
    {"**", TokenKind::Power}, {"*", TokenKind::Multiplicative}, {"//", TokenKind::Multiplicative},
    {"/", TokenKind::Multiplicative}, {"%", TokenKind::Multiplicative}, {"=", TokenKind::Assign},
}};

class Lexer {
 public:
  explicit Lexer(PreprocessedSource src) : src_(std::move(src)), s_(src_.text) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      if (text_may_follow() && lex_text()) continue;
      if (at("{#")) {
        lex_comment();
        continue;
      }
      if (at("{%-") || at("{{-")) {
        strip_trailing_text_space();
        const bool statement = s_[pos_ + 1] == '%';
        push(statement ? TokenKind::OpenStatement : TokenKind::OpenExpression, statement ? "{%" : "{{", pos_);
        if (!statement) brace_depth_ = 0;
        pos_ += 3;
        continue;
      }
      pos_ = skip_space(s_, pos_);
      if (pos_ >= s_.size()) break;
      if (at("-%}") || at("-}}")) {
        const bool statement = s_[pos_ + 1] == '%';
        push(statement ? TokenKind::CloseStatement : TokenKind::CloseExpression, statement ? "%}" : "}}", pos_);
        pos_ = skip_space(s_, pos_ + 3);
        continue;
      }
      const char c = s_[pos_];
      if ((c == '-' || c == '+') && lex_sign()) continue;
      if (lex_symbol()) continue;
      if (c == '\'' || c == '"') {
        lex_string(c);
      } else if (is_digit(c)) {
        lex_number();
      } else if (is_word(c)) {
        const std::size_t start = pos_;
        while (pos_ < s_.size() && is_word(s_[pos_])) ++pos_;
        push(TokenKind::Name, std::string(s_.substr(start, pos_ - start)), start);
      } else {
        fail("unexpected character '" + std::string(s_.substr(pos_, utf8_decode_at(s_, pos_).len)) + "'", pos_);
      }
    }
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& message, std::size_t at) const {
    throw TemplateError(message, src_.origin[std::min(at, s_.size())]);
  }

  bool at(std::string_view prefix) const { return starts_with_at(s_, pos_, prefix); }

  void push(TokenKind kind, std::string text, std::size_t at) {
    tokens_.push_back({kind, std::move(text), src_.origin[at]});
  }

  bool last_is(std::initializer_list<TokenKind> kinds) const {
    if (tokens_.empty()) return false;
    for (TokenKind k : kinds) {
      if (tokens_.back().kind == k) return true;
    }
    return false;
  }

  // Text is what comes first and what follows a closed tag or a comment.
  bool text_may_follow() const {
    return tokens_.empty() ||
           last_is({TokenKind::CloseStatement, TokenKind::CloseExpression, TokenKind::Comment});
  }

  bool lex_text() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && !(s_[pos_] == '{' && pos_ + 1 < s_.size() &&
                                 (s_[pos_ + 1] == '%' || s_[pos_ + 1] == '{' || s_[pos_ + 1] == '#'))) {
      ++pos_;
    }
    if (pos_ == start) return false;
    push(TokenKind::Text, std::string(s_.substr(start, pos_ - start)), start);
    return true;
  }

  // A "-" in an opening delimiter trims the whitespace that ends the text
  // right before it (only if the text is the previous token).
  void strip_trailing_text_space() {
    if (!last_is({TokenKind::Text})) return;
    std::string& text = tokens_.back().text;
    text.resize(text.size() - trailing_space_length(text));
    if (text.empty()) tokens_.pop_back();
  }

  void lex_comment() {
    const std::size_t start = pos_;
    pos_ += 2;
    const bool trim_before = pos_ < s_.size() && s_[pos_] == '-';
    if (trim_before) ++pos_;
    const std::size_t end = s_.find("#}", pos_);
    if (end == std::string_view::npos) fail("comment not closed with '#}'", start);
    const bool trim_after = end > pos_ && s_[end - 1] == '-';
    if (trim_before) strip_trailing_text_space();
    push(TokenKind::Comment, std::string(s_.substr(pos_, end - pos_)), start);
    pos_ = end + 2;
    if (trim_after) pos_ = skip_space(s_, pos_);
  }

  // A sign is binary after an operand, else unary, and a unary sign joins
  // the number that follows it.
  bool lex_sign() {
    if (tokens_.empty() || last_is({TokenKind::Text})) fail(std::string("unexpected '") + s_[pos_] + "'", pos_);
    if (last_is({TokenKind::Name, TokenKind::Number, TokenKind::String, TokenKind::RParen, TokenKind::RBracket})) {
      return false;
    }
    const std::size_t start = pos_;
    ++pos_;
    const std::size_t digits = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    if (pos_ > digits && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    const std::string text(s_.substr(start, pos_ - start));
    push(pos_ > digits ? TokenKind::Number : TokenKind::Sign, text, start);
    return true;
  }

  bool lex_symbol() {
    for (const Symbol& sym : kSymbols) {
      // Inside a dict literal "}}" closes braces, not the expression.
      if (sym.kind == TokenKind::CloseExpression && brace_depth_ > 0) continue;
      if (!at(sym.text)) continue;
      push(sym.kind, std::string(sym.text), pos_);
      if (sym.kind == TokenKind::OpenExpression) brace_depth_ = 0;
      if (sym.kind == TokenKind::LBrace) ++brace_depth_;
      if (sym.kind == TokenKind::RBrace) --brace_depth_;
      pos_ += sym.text.size();
      return true;
    }
    return false;
  }

  void lex_string(char quote) {
    const std::size_t start = pos_++;
    std::string value;
    for (;;) {
      if (pos_ >= s_.size()) fail("string not closed", start);
      const char c = s_[pos_];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++pos_;
        continue;
      }
      if (++pos_ >= s_.size()) fail("string not closed", start);
      const char e = s_[pos_++];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\'': case '"': case '\\': value += e; break;
        case 'x': case 'u': append_code_unit(value, e == 'x' ? 2 : 4); break;
        default: fail(std::string("unknown escape '\\") + e + "'", pos_ - 2);
      }
    }
    ++pos_;
    push(TokenKind::String, std::move(value), start);
  }

  // \xHH or \uHHHH; a \u surrogate pair makes one character.
  void append_code_unit(std::string& out, int digits) {
    auto read_hex = [&](std::size_t at) -> int64_t {
      if (at + static_cast<std::size_t>(digits) > s_.size()) return -1;
      int64_t v = 0;
      for (int i = 0; i < digits; ++i) {
        const int h = hex_value(s_[at + static_cast<std::size_t>(i)]);
        if (h < 0) return -1;
        v = v * 16 + h;
      }
      return v;
    };
    const int64_t unit = read_hex(pos_);
    if (unit < 0) fail("bad hexadecimal escape", pos_ - 2);
    pos_ += static_cast<std::size_t>(digits);
    auto cp = static_cast<uint32_t>(unit);
    if (digits == 4 && cp >= 0xD800 && cp <= 0xDBFF && starts_with_at(s_, pos_, "\\u")) {
      const std::size_t saved = pos_;
      pos_ += 2;
      const int64_t low = read_hex(pos_);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
        pos_ += 4;
      } else {
        pos_ = saved;
      }
    }
    utf8_append(out, cp);
  }

  void lex_number() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    // After a dot, "x.0.1" is two indexes, not a float.
    if (!last_is({TokenKind::Dot}) && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    push(TokenKind::Number, std::string(s_.substr(start, pos_ - start)), start);
  }

  PreprocessedSource src_;
  std::string_view s_;
  std::size_t pos_ = 0;
  int brace_depth_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

PreprocessedSource preprocess(std::string_view source) {
  MappedText text;
  text.text.assign(source);
  text.origin.resize(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) text.origin[i] = static_cast<uint32_t>(i);
  if (!text.text.empty() && text.text.back() == '\n') text.truncate(text.text.size() - 1);
  text = strip_block_indentation(text);
  text = drop_newline_after_blocks(text);
  text = remove_generation_markers(text);
  text.origin.push_back(static_cast<uint32_t>(source.size()));
  return {std::move(text.text), std::move(text.origin)};
}

std::vector<Token> tokenize(std::string_view source) { return Lexer(preprocess(source)).run(); }

}  // namespace clm::jinja
