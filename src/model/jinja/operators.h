// What the binary operators + - * / // % ** and ~ do to values: Python's
// arithmetic on integers and floats (// and % round down, integer overflow
// and division by zero are errors), + joining lists and joining a string
// with a scalar (as Hugging Face's renderer does), * repeating a string or
// list, ~ writing both sides as text.
#pragma once

#include "model/jinja/ast.h"
#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"

namespace clm::jinja {

// a ~ b: undefined writes nothing and none "None", as in Python.
Value concatenate(const Value& a, const Value& b);

// a op b for the arithmetic operators; neither side is undefined. Throws
// TemplateError for operands the operator does not take, overflow, division
// by zero, or a repetition past the limits.
Value arithmetic(BinaryOp op, const Value& a, const Value& b, const RenderLimits& limits);

}  // namespace clm::jinja
