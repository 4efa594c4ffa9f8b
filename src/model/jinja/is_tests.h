// The tests of `value is name(args)`: defined, undefined, none, string,
// number, integer, float, boolean, true, false, mapping, iterable, sequence,
// callable, odd, even, divisibleby, lower, upper, and the comparisons
// eq/equalto/==, ne/!=, lt/<, le/<=, gt/>, ge/>=, sameas, in.
#pragma once

#include <string_view>

#include "model/jinja/value.h"

namespace clm::jinja {

// Throws TemplateError for an unknown test or bad arguments.
bool apply_test(std::string_view name, const Value& operand, const CallArgs& args);

}  // namespace clm::jinja
