// Renders a parsed template: walks the statement tree with a stack of
// scopes (the globals and the context at the bottom; each loop and macro
// call opens one), counting loop iterations, call depth, nesting and work
// against RenderLimits.
#pragma once

#include <chrono>
#include <string>

#include "model/jinja/ast.h"
#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"

namespace clm::jinja {

// Evaluation nests at most this deep (statements, expressions and macro
// calls together), which keeps the C++ stack small.
inline constexpr int kMaxEvalDepth = 400;

// Throws TemplateError. `program` must outlive the call.
std::string render_program(const Body& program, const Dict& context, const RenderLimits& limits,
                           std::chrono::system_clock::time_point now);

}  // namespace clm::jinja
