#include "app/json_shape.h"

namespace clm {

JsonShape measure_json_shape(std::string_view text, int depth_limit, std::size_t values_limit) {
  JsonShape shape;
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  bool in_scalar = false;  // inside a number or literal: counted at its first byte
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '{':
      case '[':
        ++shape.values;
        ++depth;
        if (depth > shape.max_depth) shape.max_depth = depth;
        in_scalar = false;
        break;
      case '}':
      case ']':
        if (depth > 0) --depth;
        in_scalar = false;
        break;
      case '"':
        // A key is a string too; counting it keeps objects' cost in view.
        ++shape.values;
        in_string = true;
        in_scalar = false;
        break;
      case ',':
      case ':':
      case ' ':
      case '\t':
      case '\n':
      case '\r':
        in_scalar = false;
        break;
      default:
        if (!in_scalar) ++shape.values;
        in_scalar = true;
    }
    if (shape.max_depth > depth_limit || shape.values > values_limit) break;
  }
  return shape;
}

std::optional<ApiError> check_json_shape(std::string_view text, int max_depth, std::size_t max_values) {
  const JsonShape shape = measure_json_shape(text, max_depth, max_values);
  if (shape.max_depth > max_depth)
    return api_error(ErrorKind::InvalidRequest,
                     "the JSON body nests deeper than " + std::to_string(max_depth) + " levels", "", "json_too_deep");
  if (shape.values > max_values)
    return api_error(ErrorKind::InvalidRequest,
                     "the JSON body holds more than " + std::to_string(max_values) + " values", "", "json_too_large");
  return std::nullopt;
}

}  // namespace clm
