// Tokens to the statement tree. Operator precedence follows Hugging Face's
// renderer (loosest first): x if c else y; or; and; not; comparisons and
// in; + - ~; * / // %; **; is-tests; |filters; unary - +; then calls,
// attributes and subscripts.
#pragma once

#include <vector>

#include "model/jinja/ast.h"
#include "model/jinja/lexer.h"

namespace clm::jinja {

// Statements and expressions nest at most this deep (an error, not a stack
// overflow, past it).
inline constexpr int kMaxParseDepth = 200;

// Throws TemplateError at the offending token.
Body parse(const std::vector<Token>& tokens);

}  // namespace clm::jinja
