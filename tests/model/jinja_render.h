// Renders a template with a JSON context for the Jinja tests: the output,
// or "error: <message>" when parsing, the context or rendering fails.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/jinja/template.h"

namespace clm::test {

inline std::string render_jinja(std::string_view source, std::string_view context_json = "{}",
                                const jinja::RenderOptions& options = {}) {
  auto tmpl = jinja::Template::parse(source);
  if (!tmpl) return "error: " + tmpl.error().message;
  auto json = nlohmann::ordered_json::parse(context_json, nullptr, false);
  if (json.is_discarded()) return "error: bad test context";
  auto context = jinja::context_from_json(json);
  if (!context) return "error: " + context.error().message;
  auto out = tmpl->render(*context, options);
  if (!out) return "error: " + out.error().message;
  return *out;
}

}  // namespace clm::test
