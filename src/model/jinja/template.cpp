#include "model/jinja/template.h"

#include <new>

#include "model/jinja/ast.h"
#include "model/jinja/interpreter.h"
#include "model/jinja/json.h"
#include "model/jinja/lexer.h"
#include "model/jinja/parser.h"
#include "model/jinja/template_error.h"
#include "model/utf8.h"

namespace clm::jinja {

struct Template::Program {
  std::string source;  // for turning error offsets into lines and columns
  Body body;
};

namespace {

// "line L, column C: message", counting columns in characters.
std::string locate(std::string_view source, const TemplateError& e) {
  if (!e.offset()) return e.what();
  const std::size_t offset = std::min<std::size_t>(*e.offset(), source.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::size_t column = 1;
  for (std::size_t pos = line_start; pos < offset; pos += utf8_decode_at(source, pos).len) ++column;
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + e.what();
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  auto program = std::make_shared<Program>();
  program->source.assign(source);
  try {
    program->body = jinja::parse(tokenize(source));
  } catch (const TemplateError& e) {
    return fail(locate(source, e));
  } catch (const std::bad_alloc&) {
    return fail("out of memory while parsing the template");
  }
  return Template(std::move(program));
}

Result<std::string> Template::render(const Dict& context, const RenderOptions& options) const {
  try {
    return render_program(program_->body, context, options.limits,
                          options.now.value_or(std::chrono::system_clock::now()));
  } catch (const TemplateError& e) {
    return fail(locate(program_->source, e));
  } catch (const std::bad_alloc&) {
    return fail("out of memory while rendering the template");
  }
}

Result<Dict> context_from_json(const nlohmann::ordered_json& object) {
  if (!object.is_object()) return fail("the template context must be a JSON object");
  try {
    Dict d;
    const Value v = value_from_json(object);
    for (const auto& [k, x] : v.as_dict().entries()) d.append(k, x);
    return d;
  } catch (const TemplateError& e) {
    return fail(e.what());
  }
}

}  // namespace clm::jinja
