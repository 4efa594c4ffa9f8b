// Values to JSON text, as the tojson filter writes it (Python's json.dumps
// layout: ", " and ": " separators, or "," and newlines with an indent), and
// JSON documents to values (the context a template is rendered with).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/jinja/value.h"

namespace clm::jinja {

struct JsonStyle {
  int indent = 0;  // 0: one line
  bool ensure_ascii = false;  // escape every character past U+007E as \uXXXX
  bool sort_keys = false;  // by code point
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
};

// Functions cannot be written (throws TemplateError). Undefined becomes null,
// or "undefined" where undefined_as_null is false (how a list that holds an
// undefined value prints).
std::string to_json(const Value& v, const JsonStyle& style, bool undefined_as_null = true);

// JSON numbers that are whole become integers, as in JavaScript; objects keep
// the order of their keys where the document kept it (ordered_json). Throws
// TemplateError past kMaxNesting.
Value value_from_json(const nlohmann::ordered_json& j);
Value value_from_json(const nlohmann::json& j);

}  // namespace clm::jinja
