#include "model/jinja/methods.h"

#include <string>

#include "model/jinja/arguments.h"
#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

std::string method_name(std::string_view name) { return std::string(name) + "()"; }

Value string_list(const std::vector<std::string>& parts) {
  ValueList items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

// Python's strip family: whitespace, or the characters given.
Value strip(std::string_view name, const std::string& s, const CallArgs& args, bool left, bool right) {
  ArgumentReader in(method_name(name), args, 1, {"chars"});
  if (auto chars = in.string(0, "chars")) return Value::string(strip_chars(s, *chars, left, right));
  return Value::string(std::string(strip_space(s, left, right)));
}

// startswith/endswith take a string or a tuple of strings.
bool matches_affix(std::string_view name, const std::string& s, const CallArgs& args, bool prefix) {
  ArgumentReader in(method_name(name), args, 1, {});
  const Value& affix = in.required(0, "prefix");
  auto test = [&](const Value& a) {
    if (!a.is_string()) throw TemplateError(method_name(name) + " needs a string or a tuple of strings");
    return prefix ? s.starts_with(a.as_string()) : s.ends_with(a.as_string());
  };
  if (!affix.is_list()) return test(affix);
  for (const Value& a : affix.as_list()) {
    if (test(a)) return true;
  }
  return false;
}

Value string_method(const Value& object, std::string_view name, const RenderLimits& limits) {
  const std::string method(name);
  auto bind = [&](auto fn) {
    return Value::function(method, [object, fn](const CallArgs& args) { return fn(object.as_string(), args); });
  };
  auto no_args = [&](auto fn) {
    return bind([method, fn](const std::string& s, const CallArgs& args) {
      ArgumentReader(method_name(method), args, 0, {});
      return Value::string(fn(s));
    });
  };
  if (name == "upper") return no_args([](const std::string& s) { return ascii_upper(s); });
  if (name == "lower") return no_args([](const std::string& s) { return ascii_lower(s); });
  if (name == "title") return no_args([](const std::string& s) { return title_case(s); });
  if (name == "capitalize") return no_args([](const std::string& s) { return capitalize_first(s); });
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip";
    const bool right = name != "lstrip";
    return bind([method, left, right](const std::string& s, const CallArgs& args) {
      return strip(method, s, args, left, right);
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return bind([method, prefix](const std::string& s, const CallArgs& args) {
      return Value::boolean(matches_affix(method, s, args, prefix));
    });
  }
  if (name == "split") {
    return bind([](const std::string& s, const CallArgs& args) {
      ArgumentReader in("split()", args, 2, {"sep", "maxsplit"});
      const int64_t maxsplit = in.integer(1, "maxsplit", -1);
      const auto sep = in.string(0, "sep");
      if (!sep) return string_list(split_on_space(s, maxsplit));
      if (sep->empty()) throw TemplateError("split(): empty separator");
      return string_list(split_on(s, *sep, maxsplit));
    });
  }
  if (name == "replace") {
    return bind([&limits](const std::string& s, const CallArgs& args) {
      ArgumentReader in("replace()", args, 3, {"old", "new", "count"});
      const Value& from = in.required(0, "old");
      const Value& to = in.required(1, "new");
      if (!from.is_string() || !to.is_string()) throw TemplateError("replace() needs strings");
      std::string out;
      if (!replace_all(s, from.as_string(), to.as_string(), in.integer(2, "count", -1), limits.max_output_bytes, out)) {
        throw TemplateError("replace(): the result exceeds the output limit");
      }
      return Value::string(std::move(out));
    });
  }
  if (name == "join") {
    return bind([&limits](const std::string& s, const CallArgs& args) {
      ArgumentReader in("join()", args, 1, {});
      const Value& items = in.required(0, "iterable");
      if (!items.is_list()) throw TemplateError("join() needs a list, got " + std::string(kind_name(items)));
      std::string out;
      for (std::size_t i = 0; i < items.as_list().size(); ++i) {
        if (i > 0) out += s;
        out += display_string(items.as_list()[i]);
        if (out.size() > limits.max_output_bytes) throw TemplateError("join(): the result exceeds the output limit");
      }
      return Value::string(std::move(out));
    });
  }
  if (name == "find" || name == "count") {
    const bool find = name == "find";
    return bind([method, find](const std::string& s, const CallArgs& args) {
      ArgumentReader in(method_name(method), args, 1, {});
      const Value& sub = in.required(0, "sub");
      if (!sub.is_string()) throw TemplateError(method_name(method) + " needs a string");
      const std::string& needle = sub.as_string();
      if (find) {
        const std::size_t at = s.find(needle);
        if (at == std::string::npos) return Value::integer(-1);
        return Value::integer(static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, at))));
      }
      if (needle.empty()) return Value::integer(static_cast<int64_t>(code_point_count(s) + 1));
      int64_t n = 0;
      for (std::size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
      return Value::integer(n);
    });
  }
  return Value();
}

Value dict_method(const Value& object, std::string_view name) {
  const std::string method(name);
  auto bind = [&](auto fn) {
    return Value::function(method, [object, fn](const CallArgs& args) { return fn(object.as_dict(), args); });
  };
  if (name == "get") {
    return bind([](const Dict& d, const CallArgs& args) {
      ArgumentReader in("get()", args, 2, {"default"});
      const Value& key = in.required(0, "key");
      if (!key.is_string()) throw TemplateError("get(): keys are strings, got " + std::string(kind_name(key)));
      if (const Value* v = d.find(key.as_string())) return *v;
      const Value* fallback = args.get(1, "default");
      return fallback ? *fallback : Value::none();
    });
  }
  if (name == "items" || name == "keys" || name == "values") {
    return bind([method](const Dict& d, const CallArgs& args) {
      ArgumentReader(method_name(method), args, 0, {});
      ValueList out;
      out.reserve(d.size());
      for (const auto& [k, v] : d.entries()) {
        if (method == "items") out.push_back(Value::list({Value::string(k), v}));
        if (method == "keys") out.push_back(Value::string(k));
        if (method == "values") out.push_back(v);
      }
      return Value::list(std::move(out));
    });
  }
  return Value();
}

}  // namespace

Value bound_method(const Value& object, std::string_view name, const RenderLimits& limits) {
  if (object.is_string()) return string_method(object, name, limits);
  if (object.is(Value::Kind::Dict)) return dict_method(object, name);
  return Value();
}

}  // namespace clm::jinja
