#include "model/jinja/arguments.h"

#include <algorithm>

#include "model/jinja/template_error.h"

namespace clm::jinja {

ArgumentReader::ArgumentReader(std::string_view function, const CallArgs& args, std::size_t max_positional,
                               std::initializer_list<std::string_view> keywords)
    : function_(function), args_(args) {
  if (args.positional.size() > max_positional) {
    throw TemplateError(function_ + " takes at most " + std::to_string(max_positional) + " positional argument" +
                        (max_positional == 1 ? "" : "s") + ", got " + std::to_string(args.positional.size()));
  }
  for (const auto& [name, value] : args.keyword) {
    if (std::find(keywords.begin(), keywords.end(), name) == keywords.end()) {
      throw TemplateError(function_ + " has no argument '" + name + "'");
    }
  }
}

const Value* ArgumentReader::find(std::size_t index, std::string_view name) const {
  const Value* v = args_.get(index, name);
  return v && !v->is_none() && !v->is_undefined() ? v : nullptr;
}

const Value& ArgumentReader::required(std::size_t index, std::string_view name) const {
  const Value* v = args_.get(index, name);
  if (!v) throw TemplateError(function_ + " needs the argument '" + std::string(name) + "'");
  return *v;
}

void ArgumentReader::wrong_type(std::string_view name, const char* expected, const Value& got) const {
  throw TemplateError(function_ + ": '" + std::string(name) + "' must be " + expected + ", got " +
                      std::string(kind_name(got)));
}

bool ArgumentReader::boolean(std::size_t index, std::string_view name, bool fallback) const {
  const Value* v = find(index, name);
  if (!v) return fallback;
  if (!v->is(Value::Kind::Bool)) wrong_type(name, "a boolean", *v);
  return v->as_bool();
}

int64_t ArgumentReader::integer(std::size_t index, std::string_view name, int64_t fallback) const {
  const Value* v = find(index, name);
  if (!v) return fallback;
  if (!v->is(Value::Kind::Int)) wrong_type(name, "an integer", *v);
  return v->as_int();
}

std::optional<std::string> ArgumentReader::string(std::size_t index, std::string_view name) const {
  const Value* v = find(index, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->as_string();
}

std::string ArgumentReader::string(std::size_t index, std::string_view name, std::string_view fallback) const {
  auto s = string(index, name);
  return s ? *s : std::string(fallback);
}

}  // namespace clm::jinja
