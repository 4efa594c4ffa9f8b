// Methods called on values, Python style: on strings upper, lower, strip,
// lstrip, rstrip (with or without characters to strip), title, capitalize,
// startswith, endswith, split, replace, join, find, count; on dicts get,
// items, keys, values.
#pragma once

#include <string_view>

#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"

namespace clm::jinja {

// The method `name` of `object`, bound to it; undefined if it has none.
// `limits` must outlive the returned function.
Value bound_method(const Value& object, std::string_view name, const RenderLimits& limits);

}  // namespace clm::jinja
