#include "model/jinja/parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>

#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Text: return "text";
    case TokenKind::Comment: return "a comment";
    case TokenKind::String: return "a string";
    case TokenKind::Number: return "the number " + t.text;
    case TokenKind::Name: return "'" + t.text + "'";
    default: return "'" + t.text + "'";
  }
}

template <class Node>
ExprPtr make_expr(uint32_t offset, Node node) {
  auto e = std::make_unique<Expr>();
  e->offset = offset;
  e->node = std::move(node);
  return e;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body parse_template() {
    Body body = parse_body({});
    if (!done()) {
      // parse_body stops only at an end keyword none of the open blocks wants.
      fail("unexpected '" + t_[i_ + 1].text + "'", t_[i_ + 1]);
    }
    return body;
  }

 private:
  // Counts nesting so that a deeply nested template is an error, not a crash.
  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, uint32_t offset) : p(parser) {
      if (++p.depth_ > kMaxParseDepth) {
        throw TemplateError("nested more than " + std::to_string(kMaxParseDepth) + " levels deep", offset);
      }
    }
    ~DepthGuard() { --p.depth_; }
  };

  [[noreturn]] void fail(const std::string& message, const Token& at) const {
    throw TemplateError(message, at.offset);
  }
  [[noreturn]] void fail_here(const std::string& message) const {
    if (done()) throw TemplateError(message + ", got the end of the template", end_offset());
    fail(message + ", got " + describe(peek()), peek());
  }

  uint32_t end_offset() const { return t_.empty() ? 0 : t_.back().offset + static_cast<uint32_t>(t_.back().text.size()); }
  bool done() const { return i_ >= t_.size(); }
  const Token& peek(std::size_t ahead = 0) const { return t_[i_ + ahead]; }
  bool is(TokenKind kind, std::size_t ahead = 0) const { return i_ + ahead < t_.size() && t_[i_ + ahead].kind == kind; }
  bool is_name(std::string_view name, std::size_t ahead = 0) const {
    return is(TokenKind::Name, ahead) && t_[i_ + ahead].text == name;
  }
  bool is_symbol(TokenKind kind, std::string_view text) const { return is(kind) && peek().text == text; }

  const Token& expect(TokenKind kind, const char* what) {
    if (!is(kind)) fail_here(std::string("expected ") + what);
    return t_[i_++];
  }
  std::string expect_name(const char* what) { return expect(TokenKind::Name, what).text; }
  void expect_keyword(std::string_view name) {
    if (!is_name(name)) fail_here("expected '" + std::string(name) + "'");
    ++i_;
  }

  // Is the next thing "{% name" for one of `names`?
  bool at_statement(std::initializer_list<std::string_view> names) const {
    if (!is(TokenKind::OpenStatement) || !is(TokenKind::Name, 1)) return false;
    return std::find(names.begin(), names.end(), std::string_view(peek(1).text)) != names.end();
  }

  // Statements up to "{% end" (one of `ends`), which is left unread.
  Body parse_body(std::initializer_list<std::string_view> ends) {
    Body body;
    while (!done()) {
      const Token& t = peek();
      if (t.kind == TokenKind::Text) {
        body.push_back({t.offset, TextStmt{t.text}});
        ++i_;
      } else if (t.kind == TokenKind::Comment) {
        ++i_;
      } else if (t.kind == TokenKind::OpenExpression) {
        ++i_;
        ExprPtr e = parse_expression();
        expect(TokenKind::CloseExpression, "'}}'");
        body.push_back({t.offset, OutputStmt{std::move(e)}});
      } else if (t.kind == TokenKind::OpenStatement) {
        if (at_statement(ends) || at_statement({"endif", "elif", "else", "endfor", "endmacro", "endset"})) break;
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t) + " outside {{ }} and {% %}", t);
      }
    }
    return body;
  }

  // The body of a block opened at `opener`, then "{% end" (one of `ends`).
  Body parse_block(std::initializer_list<std::string_view> ends, const Token& opener) {
    Body body = parse_body(ends);
    if (done()) fail("'" + opener.text + "' is not closed", opener);
    if (!at_statement(ends)) fail("unexpected '" + peek(1).text + "' in '" + opener.text + "'", peek(1));
    return body;
  }

  void close_statement() { expect(TokenKind::CloseStatement, "'%}'"); }

  Stmt parse_statement() {
    const Token& open = expect(TokenKind::OpenStatement, "'{%'");
    DepthGuard guard(*this, open.offset);
    if (!is(TokenKind::Name)) fail_here("expected a statement name");
    const Token& keyword = peek();
    ++i_;
    const std::string& name = keyword.text;
    if (name == "if") return {open.offset, parse_if(keyword)};
    if (name == "for") return {open.offset, parse_for(keyword)};
    if (name == "set") return {open.offset, parse_set(keyword)};
    if (name == "macro") return {open.offset, parse_macro(keyword)};
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail("'" + name + "' outside a loop", keyword);
      close_statement();
      if (name == "break") return {open.offset, BreakStmt{}};
      return {open.offset, ContinueStmt{}};
    }
    fail("unsupported statement '" + name + "'", keyword);
  }

  IfStmt parse_if(const Token& keyword) {
    IfStmt s;
    ExprPtr cond = parse_expression();
    close_statement();
    Body body = parse_block({"elif", "else", "endif"}, keyword);
    s.branches.emplace_back(std::move(cond), std::move(body));
    while (at_statement({"elif"})) {
      i_ += 2;
      cond = parse_expression();
      close_statement();
      body = parse_block({"elif", "else", "endif"}, keyword);
      s.branches.emplace_back(std::move(cond), std::move(body));
    }
    if (at_statement({"else"})) {
      i_ += 2;
      close_statement();
      s.otherwise = parse_block({"endif"}, keyword);
    }
    i_ += 2;  // {% endif
    close_statement();
    return s;
  }

  ForStmt parse_for(const Token& keyword) {
    ForStmt s;
    s.targets.push_back(expect_name("a loop variable"));
    while (is(TokenKind::Comma)) {
      ++i_;
      s.targets.push_back(expect_name("a loop variable"));
    }
    expect_keyword("in");
    ExprPtr iterable = parse_expression();
    // "for x in xs if cond" parses as a conditional without else: the
    // condition filters the items.
    if (auto* c = std::get_if<ConditionalExpr>(&iterable->node); c && !c->if_false) {
      s.iterable = std::move(c->if_true);
      s.condition = std::move(c->condition);
    } else {
      s.iterable = std::move(iterable);
    }
    if (is_name("recursive")) fail("recursive loops are not supported", peek());
    close_statement();
    ++loop_depth_;
    s.body = parse_block({"else", "endfor"}, keyword);
    --loop_depth_;
    if (at_statement({"else"})) {
      i_ += 2;
      close_statement();
      s.otherwise = parse_block({"endfor"}, keyword);
    }
    i_ += 2;  // {% endfor
    close_statement();
    return s;
  }

  SetStmt parse_set(const Token& keyword) {
    SetStmt s;
    const Token& first = expect(TokenKind::Name, "a variable name");
    if (is(TokenKind::Dot)) {
      ++i_;
      s.namespace_object = make_expr(first.offset, NameExpr{first.text});
      s.names.push_back(expect_name("an attribute name"));
    } else {
      s.names.push_back(first.text);
      while (is(TokenKind::Comma)) {
        ++i_;
        s.names.push_back(expect_name("a variable name"));
      }
    }
    if (is(TokenKind::Assign)) {
      ++i_;
      s.value = parse_expression_sequence();
      close_statement();
      return s;
    }
    if (s.names.size() > 1) fail_here("expected '='");
    close_statement();
    s.body = parse_block({"endset"}, keyword);
    i_ += 2;  // {% endset
    close_statement();
    return s;
  }

  MacroStmt parse_macro(const Token& keyword) {
    MacroStmt s;
    s.name = expect_name("a macro name");
    expect(TokenKind::LParen, "'('");
    while (!is(TokenKind::RParen)) {
      MacroParam p;
      const Token& name = expect(TokenKind::Name, "a parameter name");
      p.name = name.text;
      for (const auto& other : s.params) {
        if (other.name == p.name) fail("parameter '" + p.name + "' given twice", name);
      }
      if (is(TokenKind::Assign)) {
        ++i_;
        p.default_value = parse_expression();
      } else if (!s.params.empty() && s.params.back().default_value) {
        fail("parameter '" + p.name + "' without a default follows one with a default", name);
      }
      s.params.push_back(std::move(p));
      if (!is(TokenKind::Comma)) break;
      ++i_;
    }
    expect(TokenKind::RParen, "')'");
    close_statement();
    const int loops_outside = std::exchange(loop_depth_, 0);
    s.body = parse_block({"endmacro"}, keyword);
    loop_depth_ = loops_outside;
    i_ += 2;  // {% endmacro
    close_statement();
    return s;
  }

  // a or a, b, c (a tuple)
  ExprPtr parse_expression_sequence() {
    const uint32_t offset = done() ? end_offset() : peek().offset;
    ExprPtr first = parse_expression();
    if (!is(TokenKind::Comma)) return first;
    ListExpr tuple;
    tuple.items.push_back(std::move(first));
    while (is(TokenKind::Comma)) {
      ++i_;
      tuple.items.push_back(parse_expression());
    }
    return make_expr(offset, std::move(tuple));
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this, done() ? end_offset() : peek().offset);
    ExprPtr value = parse_or();
    if (!is_name("if")) return value;
    const uint32_t offset = value->offset;
    ++i_;
    ConditionalExpr c;
    c.if_true = std::move(value);
    c.condition = parse_or();
    if (is_name("else")) {
      ++i_;
      c.if_false = parse_expression();
    }
    return make_expr(offset, std::move(c));
  }

  ExprPtr binary(BinaryOp op, ExprPtr left, ExprPtr right) {
    const uint32_t offset = left->offset;
    return make_expr(offset, BinaryExpr{op, std::move(left), std::move(right)});
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      ++i_;
      left = binary(BinaryOp::Or, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      ++i_;
      left = binary(BinaryOp::And, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!is_name("not")) return parse_comparison();
    const Token& t = peek();
    DepthGuard guard(*this, t.offset);
    ++i_;
    return make_expr(t.offset, UnaryExpr{UnaryOp::Not, parse_not()});
  }

  ExprPtr parse_comparison() {
    ExprPtr left = parse_additive();
    for (;;) {
      BinaryOp op;
      if (is_name("not") && is_name("in", 1)) {
        op = BinaryOp::NotIn;
        i_ += 2;
      } else if (is_name("in")) {
        op = BinaryOp::In;
        ++i_;
      } else if (is(TokenKind::Compare)) {
        const std::string& s = peek().text;
        op = s == "==" ? BinaryOp::Eq : s == "!=" ? BinaryOp::Ne : s == "<" ? BinaryOp::Lt
           : s == ">" ? BinaryOp::Gt : s == "<=" ? BinaryOp::Le : BinaryOp::Ge;
        ++i_;
      } else {
        return left;
      }
      left = binary(op, std::move(left), parse_additive());
    }
  }

  ExprPtr parse_additive() {
    ExprPtr left = parse_multiplicative();
    while (is(TokenKind::Additive)) {
      const std::string& s = peek().text;
      const BinaryOp op = s == "+" ? BinaryOp::Add : s == "-" ? BinaryOp::Sub : BinaryOp::Concat;
      ++i_;
      left = binary(op, std::move(left), parse_multiplicative());
    }
    return left;
  }

  ExprPtr parse_multiplicative() {
    ExprPtr left = parse_power();
    while (is(TokenKind::Multiplicative)) {
      const std::string& s = peek().text;
      const BinaryOp op = s == "*" ? BinaryOp::Mul : s == "/" ? BinaryOp::Div : s == "//" ? BinaryOp::FloorDiv
                                                                                    : BinaryOp::Mod;
      ++i_;
      left = binary(op, std::move(left), parse_power());
    }
    return left;
  }

  ExprPtr parse_power() {
    ExprPtr left = parse_test();
    while (is(TokenKind::Power)) {
      ++i_;
      left = binary(BinaryOp::Pow, std::move(left), parse_test());
    }
    return left;
  }

  ExprPtr parse_test() {
    ExprPtr operand = parse_filter();
    while (is_name("is")) {
      ++i_;
      TestExpr t;
      if (is_name("not")) {
        t.negated = true;
        ++i_;
      }
      t.name = expect_name("a test name");
      if (is(TokenKind::LParen)) t.args = parse_arguments();
      const uint32_t offset = operand->offset;
      t.operand = std::move(operand);
      operand = make_expr(offset, std::move(t));
    }
    return operand;
  }

  ExprPtr parse_filter() {
    ExprPtr operand = parse_unary();
    while (is(TokenKind::Pipe)) {
      ++i_;
      FilterExpr f;
      const uint32_t offset = done() ? end_offset() : peek().offset;
      f.name = expect_name("a filter name");
      if (is(TokenKind::LParen)) f.args = parse_arguments();
      f.operand = std::move(operand);
      operand = make_expr(offset, std::move(f));
    }
    return operand;
  }

  ExprPtr parse_unary() {
    if (is(TokenKind::Sign) || is_symbol(TokenKind::Additive, "-") || is_symbol(TokenKind::Additive, "+")) {
      const Token& t = peek();
      DepthGuard guard(*this, t.offset);
      ++i_;
      return make_expr(t.offset, UnaryExpr{t.text == "-" ? UnaryOp::Negate : UnaryOp::Plus, parse_unary()});
    }
    return parse_postfix(parse_primary());
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      const uint32_t offset = e->offset;
      if (is(TokenKind::Dot)) {
        ++i_;
        if (is(TokenKind::Number) && peek().text.find_first_not_of("0123456789") == std::string::npos) {
          ExprPtr index = parse_primary();
          e = make_expr(offset, SubscriptExpr{std::move(e), std::move(index)});
        } else {
          e = make_expr(offset, AttributeExpr{std::move(e), expect_name("an attribute name")});
        }
      } else if (is(TokenKind::LBracket)) {
        ++i_;
        e = parse_subscript(std::move(e));
      } else if (is(TokenKind::LParen)) {
        Arguments args = parse_arguments();
        e = make_expr(offset, CallExpr{std::move(e), std::move(args)});
      } else {
        return e;
      }
    }
  }

  // After "[": an index or a slice, then "]".
  ExprPtr parse_subscript(ExprPtr object) {
    const uint32_t offset = object->offset;
    ExprPtr first;
    if (!is(TokenKind::Colon)) {
      if (is(TokenKind::RBracket)) fail_here("expected an index");
      first = parse_expression();
    }
    if (is(TokenKind::RBracket)) {
      ++i_;
      return make_expr(offset, SubscriptExpr{std::move(object), std::move(first)});
    }
    SliceExpr s;
    s.object = std::move(object);
    s.start = std::move(first);
    expect(TokenKind::Colon, "':' or ']'");
    if (!is(TokenKind::Colon) && !is(TokenKind::RBracket)) s.stop = parse_expression();
    if (is(TokenKind::Colon)) {
      ++i_;
      if (!is(TokenKind::RBracket)) s.step = parse_expression();
    }
    expect(TokenKind::RBracket, "']'");
    return make_expr(offset, std::move(s));
  }

  Arguments parse_arguments() {
    expect(TokenKind::LParen, "'('");
    Arguments args;
    while (!is(TokenKind::RParen)) {
      if (is(TokenKind::Multiplicative) || is(TokenKind::Power)) fail("argument unpacking is not supported", peek());
      if (is(TokenKind::Name) && is(TokenKind::Assign, 1)) {
        std::string name = peek().text;
        i_ += 2;
        args.keyword.emplace_back(std::move(name), parse_expression());
      } else {
        if (!args.keyword.empty()) fail_here("expected a keyword argument (name=value) after keyword arguments");
        args.positional.push_back(parse_expression());
      }
      if (!is(TokenKind::Comma)) break;
      ++i_;
    }
    expect(TokenKind::RParen, "')'");
    return args;
  }

  ExprPtr parse_primary() {
    if (done()) fail_here("expected an expression");
    const Token& t = peek();
    ++i_;
    switch (t.kind) {
      case TokenKind::Number: return make_expr(t.offset, LiteralExpr{parse_number(t)});
      case TokenKind::String: {
        std::string s = t.text;
        while (is(TokenKind::String)) s += t_[i_++].text;  // "a" "b" is "ab"
        return make_expr(t.offset, LiteralExpr{Value::string(std::move(s))});
      }
      case TokenKind::Name: {
        if (t.text == "true" || t.text == "True") return make_expr(t.offset, LiteralExpr{Value::boolean(true)});
        if (t.text == "false" || t.text == "False") return make_expr(t.offset, LiteralExpr{Value::boolean(false)});
        if (t.text == "none" || t.text == "None") return make_expr(t.offset, LiteralExpr{Value::none()});
        return make_expr(t.offset, NameExpr{t.text});
      }
      case TokenKind::LParen: {
        if (is(TokenKind::RParen)) {
          ++i_;
          return make_expr(t.offset, ListExpr{});
        }
        ExprPtr e = parse_expression_sequence();
        expect(TokenKind::RParen, "')'");
        return e;
      }
      case TokenKind::LBracket: {
        ListExpr list;
        while (!is(TokenKind::RBracket)) {
          list.items.push_back(parse_expression());
          if (!is(TokenKind::Comma)) break;
          ++i_;
        }
        expect(TokenKind::RBracket, "']'");
        return make_expr(t.offset, std::move(list));
      }
      case TokenKind::LBrace: {
        DictExpr dict;
        while (!is(TokenKind::RBrace)) {
          ExprPtr key = parse_expression();
          expect(TokenKind::Colon, "':'");
          dict.entries.emplace_back(std::move(key), parse_expression());
          if (!is(TokenKind::Comma)) break;
          ++i_;
        }
        expect(TokenKind::RBrace, "'}'");
        return make_expr(t.offset, std::move(dict));
      }
      default: --i_; fail_here("expected an expression");
    }
  }

  Value parse_number(const Token& t) {
    const char* begin = t.text.data();
    const char* end = begin + t.text.size();
    if (*begin == '+') ++begin;  // from_chars takes no plus sign
    if (t.text.find('.') != std::string::npos) {
      double d = 0;
      std::from_chars(begin, end, d);
      return Value::number(d);
    }
    int64_t i = 0;
    const auto res = std::from_chars(begin, end, i);
    if (res.ec != std::errc() || res.ptr != end) fail("the number " + t.text + " is too large", t);
    return Value::integer(i);
  }

  const std::vector<Token>& t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace clm::jinja
