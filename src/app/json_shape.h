// A linear scan of a JSON text that bounds its nesting depth and its number
// of values before the parser builds anything: a deep or huge document costs
// one pass over its bytes, not a tree (nlohmann's parser recurses per level
// and allocates per value).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "app/api_error.h"

namespace clm {

struct JsonShape {
  int max_depth = 0;       // deepest nesting of arrays and objects
  std::size_t values = 0;  // scalars, arrays and objects, counted where each starts
};

// Stops counting as soon as a limit is passed. Malformed text is left for
// the parser to reject; only the limits are judged here.
JsonShape measure_json_shape(std::string_view text, int depth_limit, std::size_t values_limit);

// 400 "json_too_deep" / "json_too_large" when a limit is passed.
std::optional<ApiError> check_json_shape(std::string_view text, int max_depth, std::size_t max_values);

}  // namespace clm
