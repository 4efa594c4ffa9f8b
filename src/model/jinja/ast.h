// The parsed template: statements (text, output, if, for, set, macro, break,
// continue) and expressions. Every node keeps the source offset it starts
// at, for error messages. Immutable once parsed; rendering only reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "model/jinja/value.h"

namespace clm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct LiteralExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;  // a tuple is a list here
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
// x.name (an attribute, or a method of strings, dicts and lists)
struct AttributeExpr {
  ExprPtr object;
  std::string name;
};
// x[index]
struct SubscriptExpr {
  ExprPtr object;
  ExprPtr index;
};
// x[start:stop:step], any part may be absent
struct SliceExpr {
  ExprPtr object;
  ExprPtr start;
  ExprPtr stop;
  ExprPtr step;
};
struct CallExpr {
  ExprPtr callee;
  Arguments args;
};
enum class UnaryOp { Not, Negate, Plus };
struct UnaryExpr {
  UnaryOp op;
  ExprPtr operand;
};
enum class BinaryOp { Or, And, Eq, Ne, Lt, Gt, Le, Ge, In, NotIn, Add, Sub, Concat, Mul, Div, FloorDiv, Mod, Pow };
struct BinaryExpr {
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};
// operand | name(args)
struct FilterExpr {
  ExprPtr operand;
  std::string name;
  Arguments args;
};
// operand is [not] name(args)
struct TestExpr {
  ExprPtr operand;
  std::string name;
  bool negated = false;
  Arguments args;
};
// if_true if condition else if_false; without else it is undefined when false
struct ConditionalExpr {
  ExprPtr condition;
  ExprPtr if_true;
  ExprPtr if_false;  // may be null
};

struct Expr {
  uint32_t offset = 0;
  std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, AttributeExpr, SubscriptExpr, SliceExpr, CallExpr,
               UnaryExpr, BinaryExpr, FilterExpr, TestExpr, ConditionalExpr>
      node;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr expr;
};
struct IfStmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body otherwise;
};
struct ForStmt {
  std::vector<std::string> targets;  // one name, or several to unpack
  ExprPtr iterable;
  ExprPtr condition;  // "for x in xs if cond": may be null
  Body body;
  Body otherwise;  // when nothing was iterated
};
// set name = value, set a, b = value, set ns.attr = value, or a block set
// (value null: the body's output is the value).
struct SetStmt {
  std::vector<std::string> names;
  ExprPtr namespace_object;  // set ns.attr: names holds the one attribute
  ExprPtr value;
  Body body;
};
struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};
struct MacroStmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
  uint32_t offset = 0;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, BreakStmt, ContinueStmt> node;
};

}  // namespace clm::jinja
