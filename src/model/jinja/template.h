// A Jinja template as chat templates use the language, parsed once and
// rendered many times (concurrently too: rendering only reads the parsed
// tree). Hugging Face's renderer (@huggingface/jinja) is the reference for
// what a template writes; where it departs from Python's Jinja on text that
// reaches a model, Python wins: strip/lstrip/rstrip with characters strip
// only those characters. Lengths and indexes count code points; upper/lower
// change ASCII letters only. Errors (syntax, undefined operands,
// raise_exception, limits) name the line and column.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"
#include "util/error.h"

namespace clm::jinja {

struct RenderOptions {
  RenderLimits limits;
  // What strftime_now() sees; the clock when unset.
  std::optional<std::chrono::system_clock::time_point> now;
};

class Template {
 public:
  // Fails with "line L, column C: ..." on a syntax error.
  static Result<Template> parse(std::string_view source);

  // The variables the template sees besides the globals (namespace, range,
  // raise_exception, strftime_now, true/false/none); they shadow globals.
  Result<std::string> render(const Dict& context, const RenderOptions& options = {}) const;

 private:
  struct Program;
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

  std::shared_ptr<const Program> program_;
};

// A JSON object (key order kept) as template variables; fails on a
// non-object or nesting past kMaxNesting.
Result<Dict> context_from_json(const nlohmann::ordered_json& object);

}  // namespace clm::jinja
