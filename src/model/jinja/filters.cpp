#include "model/jinja/filters.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "model/jinja/arguments.h"
#include "model/jinja/is_tests.h"
#include "model/jinja/json.h"
#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

using K = Value::Kind;

[[noreturn]] void refuse(std::string_view filter, const Value& operand) {
  throw TemplateError("the filter '" + std::string(filter) + "' does not take " + std::string(kind_name(operand)));
}

// String filters read undefined as "".
std::string text_of(std::string_view filter, const Value& v) {
  if (v.is_undefined()) return {};
  if (!v.is_string()) refuse(filter, v);
  return v.as_string();
}

// ValueList filters read undefined as [], a string as its characters and a dict
// as its keys.
ValueList items_of(std::string_view filter, const Value& v) {
  if (v.is_undefined()) return {};
  if (v.is_list()) return v.as_list();
  ValueList out;
  if (v.is_string()) {
    for (std::string_view c : split_code_points(v.as_string())) out.push_back(Value::string(std::string(c)));
    return out;
  }
  if (v.is(K::Dict)) {
    for (const auto& e : v.as_dict().entries()) out.push_back(Value::string(e.first));
    return out;
  }
  refuse(filter, v);
}

Value checked_string(std::string s, const RenderLimits& limits, std::string_view filter) {
  if (s.size() > limits.max_output_bytes) {
    throw TemplateError("the filter '" + std::string(filter) + "' made a string past the output limit");
  }
  return Value::string(std::move(s));
}

// An attribute path "a.b.0" of a dict (or list, by index); undefined if absent.
Value attribute_path(const Value& item, std::string_view path) {
  Value v = item;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t dot = std::min(path.find('.', pos), path.size());
    const std::string part(path.substr(pos, dot - pos));
    if (v.has_attributes()) {
      const Value* next = v.as_dict().find(part);
      if (!next) return Value();
      v = *next;
    } else if (v.is_list() && !part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      const auto i = std::strtoull(part.c_str(), nullptr, 10);
      if (i >= v.as_list().size()) return Value();
      v = v.as_list()[i];
    } else {
      return Value();
    }
    pos = dot + 1;
  }
  return v;
}

// The arguments after the first `skip` positional ones (a test's or filter's own).
CallArgs rest_of(const CallArgs& args, std::size_t skip) {
  CallArgs rest;
  if (args.positional.size() > skip) {
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(skip), args.positional.end());
  }
  rest.keyword = args.keyword;
  return rest;
}

std::string name_argument(std::string_view filter, const CallArgs& args, std::size_t index) {
  if (index >= args.positional.size() || !args.positional[index].is_string()) {
    throw TemplateError("the filter '" + std::string(filter) + "' needs a name (a string) as argument " +
                        std::to_string(index + 1));
  }
  return args.positional[index].as_string();
}

// select/reject (test on the item) and selectattr/rejectattr (test on an
// attribute); without a test, truthiness decides.
// Like Python's, the filters that pick or map items take none as nothing.
ValueList picked_items(std::string_view filter, const Value& operand) {
  return operand.is_none() ? ValueList{} : items_of(filter, operand);
}

Value select(std::string_view filter, const Value& operand, const CallArgs& args, bool by_attribute, bool keep) {
  const ValueList items = picked_items(filter, operand);
  std::string attribute;
  std::size_t next = 0;
  if (by_attribute) attribute = name_argument(filter, args, next++);
  const bool has_test = args.positional.size() > next;
  const std::string test = has_test ? name_argument(filter, args, next) : std::string();
  const CallArgs test_args = rest_of(args, next + 1);
  ValueList out;
  for (const Value& item : items) {
    bool pass;
    if (by_attribute) {
      if (!item.has_attributes()) throw TemplateError("the filter '" + std::string(filter) + "' needs dicts");
      // A missing attribute fails the test, as in Hugging Face's renderer.
      const Value* a = item.as_dict().find(attribute);
      pass = a && (has_test ? apply_test(test, *a, test_args) : a->truthy());
    } else {
      pass = has_test ? apply_test(test, item, test_args) : item.truthy();
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_items(const Value& operand, const CallArgs& args, const RenderLimits& limits) {
  const ValueList items = picked_items("map", operand);
  ValueList out;
  out.reserve(items.size());
  if (const Value* attribute = args.get(SIZE_MAX, "attribute")) {
    if (!attribute->is_string() && !attribute->is(K::Int)) throw TemplateError("map(attribute=...) needs a string");
    const std::string path = attribute->is_string() ? attribute->as_string() : std::to_string(attribute->as_int());
    const Value* fallback = args.get(SIZE_MAX, "default");
    for (const Value& item : items) {
      Value v = attribute_path(item, path);
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out));
  }
  const std::string filter = name_argument("map", args, 0);
  const CallArgs filter_args = rest_of(args, 1);
  for (const Value& item : items) out.push_back(apply_filter(filter, item, filter_args, limits));
  return Value::list(std::move(out));
}

Value sort_items(const Value& operand, const CallArgs& args) {
  ArgumentReader in("sort", args, 3, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = in.boolean(0, "reverse", false);
  const bool case_sensitive = in.boolean(1, "case_sensitive", false);
  std::optional<std::string> attribute;
  if (const Value* a = in.find(2, "attribute")) {
    attribute = a->is(K::Int) ? std::to_string(a->as_int()) : in.string(2, "attribute");
  }
  ValueList items = items_of("sort", operand);
  auto key = [&](const Value& v) { return attribute ? attribute_path(v, *attribute) : v; };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int c = compare_values(key(a), key(b), case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value dictsort(const Value& operand, const CallArgs& args) {
  if (!operand.has_attributes()) refuse("dictsort", operand);
  ArgumentReader in("dictsort", args, 3, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = in.boolean(0, "case_sensitive", false);
  const std::string by = in.string(1, "by", "key");
  const bool reverse = in.boolean(2, "reverse", false);
  if (by != "key" && by != "value") throw TemplateError("dictsort: 'by' must be 'key' or 'value'");
  ValueList pairs;
  for (const auto& [k, v] : operand.as_dict().entries()) pairs.push_back(Value::list({Value::string(k), v}));
  const std::size_t index = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    const int c = compare_values(a.as_list()[index], b.as_list()[index], case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(pairs));
}

Value to_json_filter(const Value& operand, const CallArgs& args, const RenderLimits& limits) {
  ArgumentReader in("tojson", args, 0, {"indent", "ensure_ascii", "sort_keys", "separators"});
  JsonStyle style;
  const int64_t indent = in.integer(SIZE_MAX, "indent", 0);
  if (indent < 0 || indent > 64) throw TemplateError("tojson: indent must be 0 to 64");
  style.indent = static_cast<int>(indent);
  style.ensure_ascii = in.boolean(SIZE_MAX, "ensure_ascii", false);
  style.sort_keys = in.boolean(SIZE_MAX, "sort_keys", false);
  if (const Value* sep = in.find(SIZE_MAX, "separators")) {
    if (!sep->is_list() || sep->as_list().size() != 2 || !sep->as_list()[0].is_string() ||
        !sep->as_list()[1].is_string()) {
      throw TemplateError("tojson: separators must be two strings");
    }
    style.separators = {sep->as_list()[0].as_string(), sep->as_list()[1].as_string()};
  }
  return checked_string(to_json(operand, style), limits, "tojson");
}

Value indent_lines(const Value& operand, const CallArgs& args, const RenderLimits& limits) {
  ArgumentReader in("indent", args, 3, {"width", "first", "blank"});
  std::string pad;
  if (const Value* w = in.find(0, "width"); w && w->is_string()) {
    pad = w->as_string();
  } else {
    const int64_t width = in.integer(0, "width", 4);
    if (width < 0 || static_cast<uint64_t>(width) > limits.max_output_bytes) throw TemplateError("indent: bad width");
    pad.assign(static_cast<std::size_t>(width), ' ');
  }
  const bool first = in.boolean(1, "first", false);
  const bool blank = in.boolean(2, "blank", false);
  const std::vector<std::string> lines = split_on(text_of("indent", operand), "\n", -1);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if ((i > 0 || first) && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
    if (out.size() > limits.max_output_bytes) throw TemplateError("indent: the result exceeds the output limit");
  }
  return Value::string(std::move(out));
}

Value join_items(const Value& operand, const CallArgs& args, const RenderLimits& limits) {
  ArgumentReader in("join", args, 2, {"d", "attribute"});
  const std::string sep = in.string(0, "d", "");
  const auto attribute = in.string(1, "attribute");
  std::string out;
  const ValueList items = items_of("join", operand);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += display_string(attribute ? attribute_path(items[i], *attribute) : items[i]);
    if (out.size() > limits.max_output_bytes) throw TemplateError("join: the result exceeds the output limit");
  }
  return Value::string(std::move(out));
}

// JavaScript's parseInt/parseFloat: leading whitespace, then the longest
// number prefix ("12abc" is 12); nothing numeric gives the fallback.
Value parse_number(const std::string& s, bool integer, const Value& fallback) {
  const std::string t(strip_space(s, true, false));
  const char* begin = t.c_str();
  char* end = nullptr;
  errno = 0;
  if (integer) {
    const long long v = std::strtoll(begin, &end, 10);
    if (end == begin || errno == ERANGE) return fallback;
    return Value::integer(v);
  }
  if (t.starts_with("0x") || t.starts_with("0X") || t.starts_with("-0x") || t.starts_with("-0X")) {
    return Value::number(0);  // parseFloat stops at the 'x'
  }
  const double v = std::strtod(begin, &end);
  if (end == begin || std::isnan(v)) return fallback;
  return Value::number(v);
}

Value convert_number(std::string_view filter, const Value& operand, const CallArgs& args) {
  const bool integer = filter == "int";
  ArgumentReader in(filter, args, 1, {"default"});
  const Value* d = in.find(0, "default");
  const Value fallback = d ? *d : integer ? Value::integer(0) : Value::number(0);
  switch (operand.kind()) {
    case K::Undefined: return fallback;
    case K::String: return parse_number(operand.as_string(), integer, fallback);
    case K::Bool:
    case K::Int:
    case K::Float: {
      const double x = operand.as_double();
      if (!integer) return Value::number(x);
      if (operand.is(K::Int)) return operand;
      if (!std::isfinite(x) || std::fabs(x) >= 9.2e18) throw TemplateError("int: out of range");
      return Value::integer(static_cast<int64_t>(std::floor(x)));
    }
    default: refuse(filter, operand);
  }
}

Value string_filter(std::string_view name, const Value& operand, const CallArgs& args) {
  ArgumentReader(name, args, 0, {});
  const std::string s = text_of(name, operand);
  if (name == "upper") return Value::string(ascii_upper(s));
  if (name == "lower") return Value::string(ascii_lower(s));
  if (name == "title") return Value::string(title_case(s));
  return Value::string(capitalize_first(s));
}

Value to_string(const Value& operand) {
  if (operand.is_none()) return Value::string("None");
  return Value::string(operand.is_list() || operand.has_attributes()
                           ? to_json(operand, JsonStyle{}, /*undefined_as_null=*/false)
                           : display_string(operand));
}

}  // namespace

Value apply_filter(std::string_view name, const Value& v, const CallArgs& args, const RenderLimits& limits) {
  if (name == "safe") return v;
  if (name == "tojson") return to_json_filter(v, args, limits);
  if (name == "default" || name == "d") {
    ArgumentReader in(name, args, 2, {"default_value", "boolean"});
    const Value* fallback = args.get(0, "default_value");
    const bool boolean = in.boolean(1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return fallback ? *fallback : Value::string("");
    return v;
  }
  if (name == "string") return to_string(v);
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::integer(static_cast<int64_t>(code_point_count(v.as_string())));
    if (v.has_attributes()) return Value::integer(static_cast<int64_t>(v.as_dict().size()));
    return Value::integer(static_cast<int64_t>(items_of(name, v).size()));
  }
  if (name == "list") return Value::list(items_of(name, v));
  if (name == "first" || name == "last") {
    const ValueList items = items_of(name, v);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::string out;
      const auto cps = split_code_points(v.as_string());
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    ValueList items = items_of(name, v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "sort") return sort_items(v, args);
  if (name == "join") return join_items(v, args, limits);
  if (name == "unique") {
    ValueList out;
    for (const Value& x : items_of(name, v)) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return values_equal(x, y); })) out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  if (name == "trim") {
    ArgumentReader in(name, args, 1, {"chars"});
    const std::string s = text_of(name, v);
    if (auto chars = in.string(0, "chars")) return Value::string(strip_chars(s, *chars, true, true));
    return Value::string(std::string(strip_space(s, true, true)));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") return string_filter(name, v, args);
  if (name == "indent") return indent_lines(v, args, limits);
  if (name == "replace") {
    ArgumentReader in(name, args, 3, {"old", "new", "count"});
    const auto from = in.string(0, "old");
    const auto to = in.string(1, "new");
    if (!from || !to) throw TemplateError("replace needs two strings");
    std::string out;
    if (!replace_all(text_of(name, v), *from, *to, in.integer(2, "count", -1), limits.max_output_bytes, out)) {
      throw TemplateError("replace: the result exceeds the output limit");
    }
    return Value::string(std::move(out));
  }
  if (name == "int" || name == "float") return convert_number(name, v, args);
  if (name == "abs") {
    if (v.is(K::Int)) {
      if (v.as_int() == INT64_MIN) throw TemplateError("abs: integer overflow");
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is(K::Float)) return Value::number(std::fabs(v.as_float()));
    refuse(name, v);
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (!v.has_attributes()) refuse(name, v);
    ValueList out;
    for (const auto& [k, x] : v.as_dict().entries()) out.push_back(Value::list({Value::string(k), x}));
    return Value::list(std::move(out));
  }
  if (name == "dictsort") return dictsort(v, args);
  if (name == "map") return map_items(v, args, limits);
  if (name == "select" || name == "reject") return select(name, v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select(name, v, args, true, name == "selectattr");
  throw TemplateError("unknown filter '" + std::string(name) + "'");
}

}  // namespace clm::jinja
