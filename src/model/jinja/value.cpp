#include "model/jinja/value.h"

#include <algorithm>

#include "model/jinja/json.h"
#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"
#include "model/jinja/work_meter.h"

namespace clm::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::none() {
  Value v;
  v.v_ = NoneTag{};
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.v_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.v_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.v_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.v_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

void Value::note_child(const Value& child) {
  nesting_ = std::max(nesting_, child.nesting_ + 1);
  holds_namespace_ = holds_namespace_ || child.holds_namespace_;
}

void Value::check_nesting() const {
  if (nesting_ > kMaxNesting) {
    throw TemplateError("values nested more than " + std::to_string(kMaxNesting) + " levels deep");
  }
}

Value Value::list(ValueList items) {
  Value v;
  v.nesting_ = 1;
  for (const Value& x : items) v.note_child(x);
  v.check_nesting();
  v.v_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.nesting_ = 1;
  for (const auto& e : d.entries()) v.note_child(e.second);
  v.check_nesting();
  v.v_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v;
  v.nesting_ = 1;
  for (const auto& e : d.entries()) v.note_child(e.second);
  v.check_nesting();
  if (v.holds_namespace_) throw TemplateError("a namespace cannot hold a namespace");
  v.holds_namespace_ = true;
  v.v_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::function(std::string name, NativeFunction f) {
  Value v;
  v.v_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(f)});
  return v;
}

double Value::as_double() const {
  switch (kind()) {
    case Kind::Bool: return as_bool() ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(as_int());
    case Kind::Float: return as_float();
    default: throw TemplateError("expected a number, got " + std::string(kind_name(*this)));
  }
}

const Dict& Value::as_dict() const {
  if (is(Kind::Namespace)) return *std::get<std::shared_ptr<Dict>>(v_);
  return *std::get<std::shared_ptr<const Dict>>(v_);
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !as_list().empty();
    case Kind::Dict: return as_dict().size() > 0;
    case Kind::Namespace:
    case Kind::Function: return true;
  }
  return false;
}

const void* Value::identity() const {
  if (is(Kind::Namespace)) return std::get<std::shared_ptr<Dict>>(v_).get();
  if (is(Kind::Function)) return std::get<std::shared_ptr<const Callable>>(v_).get();
  return nullptr;
}

std::string_view kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Undefined: return "undefined";
    case Value::Kind::None: return "none";
    case Value::Kind::Bool: return "boolean";
    case Value::Kind::Int: return "integer";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "string";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Namespace: return "namespace";
    case Value::Kind::Function: return "function";
  }
  return "unknown";
}

namespace {

bool is_numeric_like(const Value& v) { return v.is_number() || v.is(Value::Kind::Bool); }

}  // namespace

bool values_equal(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  // Each pair compared is work: equal lists shared many times over are
  // walked as often as they are reached.
  charge_work(1);
  if (is_numeric_like(a) && is_numeric_like(b)) {
    if (a.is(Kind::Int) && b.is(Kind::Int)) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  const bool a_missing = a.is_undefined() || a.is_none();
  const bool b_missing = b.is_undefined() || b.is_none();
  if (a_missing || b_missing) return a_missing && b_missing;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::String:
      charge_work(std::min(a.as_string().size(), b.as_string().size()) / 64);
      return a.as_string() == b.as_string();
    case Kind::List: {
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), values_equal);
    }
    case Kind::Dict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [key, value] : x.entries()) {
        const Value* other = y.find(key);
        if (!other || !values_equal(value, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool value_in(const Value& item, const Value& container) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (!item.is_string()) throw TemplateError("'in <string>' needs a string on the left, got " + std::string(kind_name(item)));
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& x : container.as_list()) {
      if (values_equal(x, item)) return true;
    }
    return false;
  }
  if (container.has_attributes()) return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
  throw TemplateError("'in' needs a string, list or dict on the right, got " + std::string(kind_name(container)));
}

int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (is_numeric_like(a) && is_numeric_like(b)) {
    if (a.is(Value::Kind::Int) && b.is(Value::Kind::Int)) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
    const double x = a.as_double();
    const double y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code point order.
    const int c = case_sensitive ? a.as_string().compare(b.as_string())
                                 : ascii_lower(a.as_string()).compare(ascii_lower(b.as_string()));
    return c < 0 ? -1 : c > 0;
  }
  throw TemplateError("cannot compare " + std::string(kind_name(a)) + " with " + std::string(kind_name(b)));
}

std::string display_string(const Value& v) {
  using Kind = Value::Kind;
  switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None: return {};
    case Kind::Bool: return v.as_bool() ? "true" : "false";
    case Kind::Int: return std::to_string(v.as_int());
    case Kind::Float: return float_to_display(v.as_float());
    case Kind::String: return v.as_string();
    case Kind::List:
    case Kind::Dict:
    case Kind::Namespace: return to_json(v, JsonStyle{}, /*undefined_as_null=*/false);
    case Kind::Function:
      throw TemplateError("cannot write the function '" + v.as_function().name + "' (a call without parentheses?)");
  }
  return {};
}

}  // namespace clm::jinja
