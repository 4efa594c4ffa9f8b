#include "model/jinja/operators.h"

#include <cmath>
#include <string>

#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

using K = Value::Kind;

// a op b on integers, an error where it overflows.
template <class Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op(a, b, &r)) throw TemplateError("integer overflow");
  return r;
}
constexpr auto kAdd = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
constexpr auto kSub = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
constexpr auto kMul = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };

// Python's // and % on integers: the quotient rounds down, the remainder
// takes the divisor's sign.
int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw TemplateError("integer overflow");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// ~ writes undefined as nothing and none as "None", as Python does.
std::string concat_text(const Value& v) { return v.is_none() ? "None" : display_string(v); }

bool numeric(const Value& v) { return v.is_number() || v.is(K::Bool); }
int64_t as_integer(const Value& v) { return v.is(K::Bool) ? (v.as_bool() ? 1 : 0) : v.as_int(); }

Value repeat(const Value& seq, int64_t times, const RenderLimits& limits) {
  const std::size_t n = times > 0 ? static_cast<std::size_t>(times) : 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (n > 0 && s.size() > limits.max_output_bytes / n) throw TemplateError("a repeated string exceeds the output limit");
    std::string out;
    out.reserve(s.size() * n);
    for (std::size_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const ValueList& items = seq.as_list();
  if (n > 0 && items.size() > limits.max_loop_iterations / n) throw TemplateError("a repeated list exceeds the limit");
  ValueList out;
  for (std::size_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out));
}

int64_t int_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = checked(kMul, result, base);
    exponent >>= 1;
    if (exponent > 0) base = checked(kMul, base, base);
  }
  return result;
}

}  // namespace

Value concatenate(const Value& a, const Value& b) { return Value::string(concat_text(a) + concat_text(b)); }

Value arithmetic(BinaryOp op, const Value& a, const Value& b, const RenderLimits& limits) {
  const char* symbol = op == BinaryOp::Add ? "+" : op == BinaryOp::Sub ? "-" : op == BinaryOp::Mul ? "*"
                     : op == BinaryOp::Div ? "/" : op == BinaryOp::FloorDiv ? "//" : op == BinaryOp::Mod ? "%" : "**";
  if (op == BinaryOp::Add) {
    if (a.is_list() && b.is_list()) {
      if (a.as_list().size() + b.as_list().size() > limits.max_loop_iterations) throw TemplateError("a list exceeds the limit");
      ValueList out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out));
    }
    // A string and a scalar concatenate, as in Hugging Face's renderer.
    if ((a.is_string() && (b.is_string() || numeric(b))) || (b.is_string() && numeric(a))) {
      return Value::string(display_string(a) + display_string(b));
    }
  }
  if (op == BinaryOp::Mul) {
    if ((a.is_string() || a.is_list()) && b.is(K::Int)) return repeat(a, b.as_int(), limits);
    if ((b.is_string() || b.is_list()) && a.is(K::Int)) return repeat(b, a.as_int(), limits);
  }
  if (!numeric(a) || !numeric(b)) {
    throw TemplateError(std::string("cannot apply ") + symbol + " to " + std::string(kind_name(a)) + " and " +
                        std::string(kind_name(b)));
  }
  const bool integers = !a.is(K::Float) && !b.is(K::Float);
  if (integers && op != BinaryOp::Div) {
    const int64_t x = as_integer(a);
    const int64_t y = as_integer(b);
    switch (op) {
      case BinaryOp::Add: return Value::integer(checked(kAdd, x, y));
      case BinaryOp::Sub: return Value::integer(checked(kSub, x, y));
      case BinaryOp::Mul: return Value::integer(checked(kMul, x, y));
      case BinaryOp::FloorDiv:
        if (y == 0) throw TemplateError("division by zero");
        return Value::integer(floor_div(x, y));
      case BinaryOp::Mod:
        if (y == 0) throw TemplateError("modulo by zero");
        return Value::integer(floor_mod(x, y));
      case BinaryOp::Pow:
        if (y >= 0) return Value::integer(int_power(x, y));
        break;
      default: break;
    }
  }
  const double x = a.as_double();
  const double y = b.as_double();
  double r = 0;
  switch (op) {
    case BinaryOp::Add: r = x + y; break;
    case BinaryOp::Sub: r = x - y; break;
    case BinaryOp::Mul: r = x * y; break;
    case BinaryOp::Div:
      if (y == 0) throw TemplateError("division by zero");
      r = x / y;
      break;
    case BinaryOp::FloorDiv:
      if (y == 0) throw TemplateError("division by zero");
      r = std::floor(x / y);
      break;
    case BinaryOp::Mod:
      if (y == 0) throw TemplateError("modulo by zero");
      r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      break;
    case BinaryOp::Pow:
      if (x == 0 && y < 0) throw TemplateError("0 cannot be raised to a negative power");
      r = std::pow(x, y);
      break;
    default: break;
  }
  if (!std::isfinite(r)) throw TemplateError(std::string("the result of ") + symbol + " is not a finite number");
  return Value::number(r);
}

}  // namespace clm::jinja
