#include "model/jinja/interpreter.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "model/jinja/filters.h"
#include "model/jinja/globals.h"
#include "model/jinja/is_tests.h"
#include "model/jinja/methods.h"
#include "model/jinja/operators.h"
#include "model/jinja/string_ops.h"
#include "model/jinja/work_meter.h"
#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

using K = Value::Kind;

enum class Flow { Normal, Break, Continue };

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// C++20 deduces this for an aggregate by itself; clang before 17 needs it said.
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// What an undefined operand was called, for messages ("'x' is undefined").
std::string describe_operand(const Expr& e) {
  if (const auto* n = std::get_if<NameExpr>(&e.node)) return "'" + n->name + "'";
  if (const auto* a = std::get_if<AttributeExpr>(&e.node)) return "the attribute '" + a->name + "'";
  return "a value";
}

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::chrono::system_clock::time_point now)
      : limits_(limits),
        now_(now),
        meter_(limits.max_work, limits.max_output_bytes,
               std::chrono::duration_cast<WorkMeter::Clock::duration>(std::chrono::duration<double>(limits.max_seconds))) {}

  std::string run(const Body& program, const Dict& context) {
    Dict globals = make_globals(limits_, now_);
    for (const auto& [k, v] : context.entries()) globals.set(k, v);
    frames_.emplace_back(globals.entries());
    std::string out;
    exec_body(program, out);
    return out;
  }

 private:
  using Frame = std::vector<std::pair<std::string, Value>>;

  struct DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& i) : in(i) {
      if (++in.depth_ > kMaxEvalDepth) {
        throw TemplateError("evaluation nested more than " + std::to_string(kMaxEvalDepth) + " levels deep");
      }
    }
    ~DepthGuard() { --in.depth_; }
  };

  // ---- limits ----

  void add_work(uint64_t units) { meter_.charge(units); }

  void count_iteration() {
    if (++iterations_ > limits_.max_loop_iterations) {
      throw TemplateError("loops ran more than " + std::to_string(limits_.max_loop_iterations) + " iterations");
    }
  }

  void check_size(const Value& v) const {
    if (v.is_string() && v.as_string().size() > limits_.max_output_bytes) {
      throw TemplateError("a string exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    if (v.is_list() && v.as_list().size() > limits_.max_loop_iterations) {
      throw TemplateError("a list exceeds the limit of " + std::to_string(limits_.max_loop_iterations) + " items");
    }
  }

  void append(std::string& out, std::string_view piece) {
    add_work(piece.size());
    if (out.size() + piece.size() > limits_.max_output_bytes) {
      throw TemplateError("the output exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    out += piece;
  }

  // ---- scopes ----

  Value lookup(std::string_view name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
      for (const auto& [k, v] : *frame) {
        if (k == name) return v;
      }
    }
    return Value();
  }

  void set_local(const std::string& name, Value value) {
    for (auto& [k, v] : frames_.back()) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    frames_.back().emplace_back(name, std::move(value));
  }

  void assign(const std::vector<std::string>& names, const Value& value) {
    if (names.size() == 1) {
      set_local(names[0], value);
      return;
    }
    if (!value.is_list() || value.as_list().size() != names.size()) {
      throw TemplateError("cannot unpack " + std::string(kind_name(value)) +
                          (value.is_list() ? " of " + std::to_string(value.as_list().size()) + " items" : "") + " into " +
                          std::to_string(names.size()) + " names");
    }
    for (std::size_t i = 0; i < names.size(); ++i) set_local(names[i], value.as_list()[i]);
  }

  // ---- statements ----

  Flow exec_body(const Body& body, std::string& out) {
    for (const Stmt& s : body) {
      const Flow f = exec(s, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    DepthGuard guard(*this);
    try {
      return std::visit(Overloaded{
                            [&](const TextStmt& t) { append(out, t.text); return Flow::Normal; },
                            [&](const OutputStmt& o) { append(out, display_string(eval(*o.expr))); return Flow::Normal; },
                            [&](const IfStmt& i) { return exec_if(i, out); },
                            [&](const ForStmt& f) { return exec_for(f, out); },
                            [&](const SetStmt& st) { exec_set(st); return Flow::Normal; },
                            [&](const MacroStmt& m) { define_macro(m); return Flow::Normal; },
                            [&](const BreakStmt&) { return Flow::Break; },
                            [&](const ContinueStmt&) { return Flow::Continue; },
                        },
                        s.node);
    } catch (TemplateError& e) {
      e.set_offset_if_unknown(s.offset);
      throw;
    }
  }

  Flow exec_if(const IfStmt& s, std::string& out) {
    for (const auto& [condition, body] : s.branches) {
      if (eval(*condition).truthy()) return exec_body(body, out);
    }
    return exec_body(s.otherwise, out);
  }

  // What a loop walks: a list's items, a dict's keys, a string's characters;
  // undefined is empty.
  ValueList loop_items(const Value& v) const {
    if (v.is_list()) return v.as_list();
    ValueList out;
    if (v.is(K::Dict)) {
      for (const auto& e : v.as_dict().entries()) out.push_back(Value::string(e.first));
    } else if (v.is_string()) {
      for (std::string_view c : split_code_points(v.as_string())) out.push_back(Value::string(std::string(c)));
    } else if (!v.is_undefined()) {
      throw TemplateError("cannot loop over " + std::string(kind_name(v)));
    }
    return out;
  }

  static Value loop_info(const ValueList& items, std::size_t i) {
    const auto n = static_cast<int64_t>(items.size());
    const auto index = static_cast<int64_t>(i);
    Dict loop;
    loop.append("index", Value::integer(index + 1));
    loop.append("index0", Value::integer(index));
    loop.append("revindex", Value::integer(n - index));
    loop.append("revindex0", Value::integer(n - index - 1));
    loop.append("first", Value::boolean(i == 0));
    loop.append("last", Value::boolean(index == n - 1));
    loop.append("length", Value::integer(n));
    loop.append("previtem", i > 0 ? items[i - 1] : Value());
    loop.append("nextitem", index + 1 < n ? items[i + 1] : Value());
    loop.append("cycle", Value::function("cycle", [i](const CallArgs& args) {
                  if (args.positional.empty()) throw TemplateError("loop.cycle() needs at least one value");
                  return args.positional[i % args.positional.size()];
                }));
    return Value::dict(std::move(loop));
  }

  Flow exec_for(const ForStmt& s, std::string& out) {
    ValueList items = loop_items(eval(*s.iterable));
    frames_.emplace_back();
    if (s.condition) {
      ValueList kept;
      for (const Value& item : items) {
        count_iteration();
        assign(s.targets, item);
        if (eval(*s.condition).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    Flow result = Flow::Normal;
    for (std::size_t i = 0; i < items.size(); ++i) {
      count_iteration();
      set_local("loop", loop_info(items, i));
      assign(s.targets, items[i]);
      if (exec_body(s.body, out) == Flow::Break) break;
    }
    frames_.pop_back();
    if (items.empty()) result = exec_body(s.otherwise, out);
    return result;
  }

  void exec_set(const SetStmt& s) {
    Value value;
    if (s.value) {
      value = eval(*s.value);
    } else {
      std::string text;
      exec_body(s.body, text);
      value = Value::string(std::move(text));
    }
    if (!s.namespace_object) {
      assign(s.names, value);
      return;
    }
    const Value target = eval(*s.namespace_object);
    if (!target.is(K::Namespace)) {
      throw TemplateError("cannot set an attribute of " + std::string(kind_name(target)) + " (only of a namespace)");
    }
    if (value.holds_namespace()) throw TemplateError("a namespace cannot hold a namespace");
    target.namespace_entries().set(s.names[0], std::move(value));
  }

  void define_macro(const MacroStmt& m) {
    set_local(m.name, Value::function(m.name, [this, &m](const CallArgs& args) { return call_macro(m, args); }));
  }

  Value call_macro(const MacroStmt& m, const CallArgs& args) {
    if (calls_ >= limits_.max_call_depth) {
      throw TemplateError("macro calls nested more than " + std::to_string(limits_.max_call_depth) + " deep");
    }
    if (args.positional.size() > m.params.size()) {
      throw TemplateError("macro '" + m.name + "' takes at most " + std::to_string(m.params.size()) + " argument" +
                          (m.params.size() == 1 ? "" : "s") + ", got " + std::to_string(args.positional.size()));
    }
    for (const auto& [name, value] : args.keyword) {
      bool known = false;
      for (std::size_t i = 0; i < m.params.size(); ++i) {
        if (m.params[i].name != name) continue;
        if (i < args.positional.size()) throw TemplateError("macro '" + m.name + "' got '" + name + "' twice");
        known = true;
      }
      if (!known) throw TemplateError("macro '" + m.name + "' has no parameter '" + name + "'");
    }
    ++calls_;
    frames_.emplace_back();
    std::vector<const MacroParam*> defaults;
    for (std::size_t i = 0; i < m.params.size(); ++i) {
      const MacroParam& p = m.params[i];
      const Value* given = args.get(i, p.name);
      set_local(p.name, given ? *given : Value());
      if (!given && p.default_value) defaults.push_back(&p);
    }
    for (const MacroParam* p : defaults) set_local(p->name, eval(*p->default_value));
    std::string out;
    exec_body(m.body, out);
    frames_.pop_back();
    --calls_;
    return Value::string(std::move(out));
  }

  // ---- expressions ----

  Value eval(const Expr& e) {
    DepthGuard guard(*this);
    try {
      Value v = std::visit([&](const auto& node) { return eval_node(node, e); }, e.node);
      check_size(v);
      // New strings and lists cost their size; everything else one unit.
      const bool makes_value = std::holds_alternative<BinaryExpr>(e.node) || std::holds_alternative<CallExpr>(e.node) ||
                               std::holds_alternative<FilterExpr>(e.node) || std::holds_alternative<ListExpr>(e.node) ||
                               std::holds_alternative<SliceExpr>(e.node);
      uint64_t units = 1;
      if (makes_value && v.is_string()) units += v.as_string().size();
      if (makes_value && v.is_list()) units += v.as_list().size();
      add_work(units);
      return v;
    } catch (TemplateError& err) {
      err.set_offset_if_unknown(e.offset);
      throw;
    }
  }

  Value eval_node(const LiteralExpr& n, const Expr&) { return n.value; }
  Value eval_node(const NameExpr& n, const Expr&) { return lookup(n.name); }

  Value eval_node(const ListExpr& n, const Expr&) {
    ValueList items;
    items.reserve(n.items.size());
    for (const ExprPtr& x : n.items) items.push_back(eval(*x));
    return Value::list(std::move(items));
  }

  Value eval_node(const DictExpr& n, const Expr&) {
    Dict d;
    for (const auto& [key_expr, value_expr] : n.entries) {
      const Value key = eval(*key_expr);
      if (!key.is_string()) throw TemplateError("dict keys must be strings, got " + std::string(kind_name(key)));
      d.set(key.as_string(), eval(*value_expr));
    }
    return Value::dict(std::move(d));
  }

  // x.name: a dict's key (else its method), a namespace's attribute, a
  // string's or list's length or method; undefined otherwise.
  Value attribute(const Value& object, const std::string& name) const {
    if (object.has_attributes()) {
      if (const Value* v = object.as_dict().find(name)) return *v;
      return object.is(K::Dict) ? bound_method(object, name, limits_) : Value();
    }
    if (name == "length" && object.is_string()) {
      return Value::integer(static_cast<int64_t>(code_point_count(object.as_string())));
    }
    if (name == "length" && object.is_list()) return Value::integer(static_cast<int64_t>(object.as_list().size()));
    return bound_method(object, name, limits_);
  }

  Value eval_node(const AttributeExpr& n, const Expr&) { return attribute(eval(*n.object), n.name); }

  Value eval_node(const SubscriptExpr& n, const Expr&) {
    const Value object = eval(*n.object);
    const Value index = eval(*n.index);
    if (index.is_string()) return attribute(object, index.as_string());
    if (!index.is(K::Int)) throw TemplateError("cannot index with " + std::string(kind_name(index)));
    if (object.is_list()) {
      const ValueList& items = object.as_list();
      const int64_t i = index.as_int() < 0 ? index.as_int() + static_cast<int64_t>(items.size()) : index.as_int();
      if (i < 0 || i >= static_cast<int64_t>(items.size())) return Value();
      return items[static_cast<std::size_t>(i)];
    }
    if (object.is_string()) {
      const auto chars = split_code_points(object.as_string());
      const int64_t i = index.as_int() < 0 ? index.as_int() + static_cast<int64_t>(chars.size()) : index.as_int();
      if (i < 0 || i >= static_cast<int64_t>(chars.size())) return Value();
      return Value::string(std::string(chars[static_cast<std::size_t>(i)]));
    }
    throw TemplateError("cannot index " + std::string(kind_name(object)) + " with an integer");
  }

  std::optional<int64_t> slice_bound(const ExprPtr& e, const char* what) {
    if (!e) return std::nullopt;
    const Value v = eval(*e);
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is(K::Int)) throw TemplateError(std::string("slice ") + what + " must be an integer, got " + std::string(kind_name(v)));
    return v.as_int();
  }

  // Python's slice: negative bounds count from the end, out-of-range bounds
  // clamp, a negative step walks backwards.
  Value eval_node(const SliceExpr& n, const Expr&) {
    const Value object = eval(*n.object);
    const auto start_arg = slice_bound(n.start, "start");
    const auto stop_arg = slice_bound(n.stop, "stop");
    const int64_t step = slice_bound(n.step, "step").value_or(1);
    if (step == 0) throw TemplateError("slice step cannot be zero");
    std::vector<std::string_view> chars;
    if (object.is_string()) {
      chars = split_code_points(object.as_string());
    } else if (!object.is_list()) {
      throw TemplateError("cannot slice " + std::string(kind_name(object)));
    }
    const auto len = static_cast<int64_t>(object.is_string() ? chars.size() : object.as_list().size());
    auto clamp = [&](std::optional<int64_t> b, int64_t fallback, int64_t lo, int64_t hi) {
      if (!b) return fallback;
      const int64_t v = *b < 0 ? *b + len : *b;
      return std::clamp(v, lo, hi);
    };
    const int64_t start = step > 0 ? clamp(start_arg, 0, 0, len) : clamp(start_arg, len - 1, -1, len - 1);
    const int64_t stop = step > 0 ? clamp(stop_arg, len, 0, len) : clamp(stop_arg, -1, -1, len - 1);
    std::string text;
    ValueList items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (object.is_string()) {
        text += chars[static_cast<std::size_t>(i)];
      } else {
        items.push_back(object.as_list()[static_cast<std::size_t>(i)]);
      }
    }
    return object.is_string() ? Value::string(std::move(text)) : Value::list(std::move(items));
  }

  CallArgs eval_arguments(const Arguments& a) {
    CallArgs args;
    args.positional.reserve(a.positional.size());
    for (const ExprPtr& x : a.positional) args.positional.push_back(eval(*x));
    for (const auto& [name, x] : a.keyword) {
      for (const auto& [seen, v] : args.keyword) {
        if (seen == name) throw TemplateError("the argument '" + name + "' is given twice");
      }
      args.keyword.emplace_back(name, eval(*x));
    }
    return args;
  }

  Value eval_node(const CallExpr& n, const Expr&) {
    const Value callee = eval(*n.callee);
    if (!callee.is(K::Function)) {
      if (callee.is_undefined()) throw TemplateError(describe_operand(*n.callee) + " is not defined (called as a function)");
      throw TemplateError("cannot call " + std::string(kind_name(callee)));
    }
    const CallArgs args = eval_arguments(n.args);
    return callee.as_function().call(args);
  }

  Value eval_node(const UnaryExpr& n, const Expr&) {
    const Value v = eval(*n.operand);
    if (n.op == UnaryOp::Not) return Value::boolean(!v.truthy());
    const bool negate = n.op == UnaryOp::Negate;
    if (v.is(K::Float)) return Value::number(negate ? -v.as_float() : v.as_float());
    if (v.is(K::Int) || v.is(K::Bool)) {
      const int64_t i = v.is(K::Bool) ? (v.as_bool() ? 1 : 0) : v.as_int();
      if (negate && i == INT64_MIN) throw TemplateError("integer overflow");
      return Value::integer(negate ? -i : i);
    }
    if (v.is_undefined()) throw TemplateError(describe_operand(*n.operand) + " is undefined");
    throw TemplateError(std::string("unary ") + (negate ? "-" : "+") + " needs a number, got " + std::string(kind_name(v)));
  }

  Value eval_node(const BinaryExpr& n, const Expr&) {
    if (n.op == BinaryOp::And || n.op == BinaryOp::Or) {
      Value left = eval(*n.left);
      if (left.truthy() == (n.op == BinaryOp::Or)) return left;
      return eval(*n.right);
    }
    const Value a = eval(*n.left);
    const Value b = eval(*n.right);
    switch (n.op) {
      case BinaryOp::Eq: return Value::boolean(values_equal(a, b));
      case BinaryOp::Ne: return Value::boolean(!values_equal(a, b));
      case BinaryOp::In: return Value::boolean(value_in(a, b));
      case BinaryOp::NotIn: return Value::boolean(!value_in(a, b));
      case BinaryOp::Concat: return concatenate(a, b);
      default: break;
    }
    if (a.is_undefined() || b.is_undefined()) {
      throw TemplateError(describe_operand(a.is_undefined() ? *n.left : *n.right) + " is undefined");
    }
    switch (n.op) {
      case BinaryOp::Lt: return Value::boolean(compare_values(a, b) < 0);
      case BinaryOp::Gt: return Value::boolean(compare_values(a, b) > 0);
      case BinaryOp::Le: return Value::boolean(compare_values(a, b) <= 0);
      case BinaryOp::Ge: return Value::boolean(compare_values(a, b) >= 0);
      default: return arithmetic(n.op, a, b, limits_);
    }
  }

  Value eval_node(const FilterExpr& n, const Expr&) {
    const Value operand = eval(*n.operand);
    return apply_filter(n.name, operand, eval_arguments(n.args), limits_);
  }

  Value eval_node(const TestExpr& n, const Expr&) {
    const Value operand = eval(*n.operand);
    const bool result = apply_test(n.name, operand, eval_arguments(n.args));
    return Value::boolean(result != n.negated);
  }

  Value eval_node(const ConditionalExpr& n, const Expr&) {
    if (eval(*n.condition).truthy()) return eval(*n.if_true);
    return n.if_false ? eval(*n.if_false) : Value();
  }

  const RenderLimits limits_;
  const std::chrono::system_clock::time_point now_;
  std::vector<Frame> frames_;
  uint64_t iterations_ = 0;
  WorkMeter meter_;  // installed on this thread for the rendering
  int depth_ = 0;
  int calls_ = 0;
};

}  // namespace

std::string render_program(const Body& program, const Dict& context, const RenderLimits& limits,
                           std::chrono::system_clock::time_point now) {
  return Interpreter(limits, now).run(program, context);
}

}  // namespace clm::jinja
