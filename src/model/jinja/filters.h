// The filters of `value | name(args)`: safe, tojson, default/d, string,
// length/count, list, first, last, reverse, sort, join, unique, trim, upper,
// lower, title, capitalize, indent, replace, int, float, abs, items,
// dictsort, map, select, reject, selectattr, rejectattr.
// An undefined operand reads as "" for string filters and [] for list ones.
#pragma once

#include <string_view>

#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"

namespace clm::jinja {

// Throws TemplateError for an unknown filter, an operand it does not take,
// bad arguments, or a result beyond limits.max_output_bytes.
Value apply_filter(std::string_view name, const Value& operand, const CallArgs& args, const RenderLimits& limits);

}  // namespace clm::jinja
