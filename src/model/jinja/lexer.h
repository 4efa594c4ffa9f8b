// Template source to tokens. First the whitespace rules Hugging Face applies
// to chat templates (lstrip_blocks and trim_blocks on, one final newline
// dropped, {% generation %} markers removed), then Jinja's delimiters and
// expression tokens, with "-" in a delimiter trimming the whitespace beside it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clm::jinja {

enum class TokenKind {
  Text,
  Comment,
  OpenStatement,    // {%
  CloseStatement,   // %}
  OpenExpression,   // {{
  CloseExpression,  // }}
  Number,           // 12, 1.5, -3 (a sign where no operand precedes it)
  String,           // the literal's value, escapes resolved
  Name,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Dot,
  Colon,
  Pipe,
  Assign,          // =
  Compare,         // == != < > <= >=
  Additive,        // + - ~
  Multiplicative,  // * / // %
  Power,           // **
  Sign,            // a unary - or + not followed by a number
};

struct Token {
  TokenKind kind;
  std::string text;
  uint32_t offset;  // byte offset in the original source
};

// The source after the whitespace rules; origin[i] is where text[i] came
// from in the source (one extra entry for the end).
struct PreprocessedSource {
  std::string text;
  std::vector<uint32_t> origin;
};
PreprocessedSource preprocess(std::string_view source);

// Throws TemplateError at the offending character.
std::vector<Token> tokenize(std::string_view source);

}  // namespace clm::jinja
