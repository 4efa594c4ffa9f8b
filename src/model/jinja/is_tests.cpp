#include "model/jinja/is_tests.h"

#include <string>

#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

using K = Value::Kind;

const Value& argument(std::string_view test, const CallArgs& args) {
  if (args.positional.empty()) throw TemplateError("the test '" + std::string(test) + "' needs an argument");
  return args.positional[0];
}

int64_t integer_operand(std::string_view test, const Value& v) {
  if (!v.is(K::Int)) {
    throw TemplateError("the test '" + std::string(test) + "' needs an integer, got " + std::string(kind_name(v)));
  }
  return v.as_int();
}

}  // namespace

bool apply_test(std::string_view name, const Value& v, const CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(K::Int);
  if (name == "float") return v.is(K::Float);
  if (name == "boolean") return v.is(K::Bool);
  if (name == "true") return v.is(K::Bool) && v.as_bool();
  if (name == "false") return v.is(K::Bool) && !v.as_bool();
  if (name == "mapping") return v.is(K::Dict);
  // As in Hugging Face's renderer: strings and lists, not dicts.
  if (name == "iterable") return v.is_list() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is(K::Dict);
  if (name == "callable") return v.is(K::Function);
  if (name == "odd") return integer_operand(name, v) % 2 != 0;
  if (name == "even") return integer_operand(name, v) % 2 == 0;
  if (name == "divisibleby") {
    const int64_t d = integer_operand(name, argument(name, args));
    if (d == 0) throw TemplateError("divisibleby(0)");
    return integer_operand(name, v) % d == 0;
  }
  if (name == "lower") return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, argument(name, args));
  if (name == "ne" || name == "!=") return !values_equal(v, argument(name, args));
  if (name == "sameas") {
    const Value& other = argument(name, args);
    if (v.identity() || other.identity()) return v.identity() == other.identity();
    return v.kind() == other.kind() && values_equal(v, other);
  }
  if (name == "lt" || name == "<") return compare_values(v, argument(name, args)) < 0;
  if (name == "le" || name == "<=") return compare_values(v, argument(name, args)) <= 0;
  if (name == "gt" || name == ">") return compare_values(v, argument(name, args)) > 0;
  if (name == "ge" || name == ">=") return compare_values(v, argument(name, args)) >= 0;
  if (name == "in") return value_in(v, argument(name, args));
  throw TemplateError("unknown test '" + std::string(name) + "'");
}

}  // namespace clm::jinja
