// Typed reading of a call's arguments for the built-in filters, methods and
// functions, with errors that name the function and the argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "model/jinja/value.h"

namespace clm::jinja {

class ArgumentReader {
 public:
  // Refuses more than `max_positional` positional arguments and keywords
  // not in `keywords` (throws TemplateError).
  ArgumentReader(std::string_view function, const CallArgs& args, std::size_t max_positional,
                 std::initializer_list<std::string_view> keywords);

  // Argument `index`, else keyword `name`; nullptr when absent (none counts
  // as absent).
  const Value* find(std::size_t index, std::string_view name) const;
  const Value& required(std::size_t index, std::string_view name) const;
  bool boolean(std::size_t index, std::string_view name, bool fallback) const;
  int64_t integer(std::size_t index, std::string_view name, int64_t fallback) const;
  std::optional<std::string> string(std::size_t index, std::string_view name) const;
  std::string string(std::size_t index, std::string_view name, std::string_view fallback) const;

 private:
  [[noreturn]] void wrong_type(std::string_view name, const char* expected, const Value& got) const;

  std::string function_;
  const CallArgs& args_;
};

}  // namespace clm::jinja
