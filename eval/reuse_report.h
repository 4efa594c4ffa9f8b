// The reuse evaluation's results as JSON (everything, per case and per
// variant) and as a Markdown table (the per-variant summary).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reuse_eval.h"

namespace clm {

nlohmann::json to_json(const ReuseEvalResult& result);
std::string to_markdown(const ReuseEvalResult& result);

}  // namespace clm
