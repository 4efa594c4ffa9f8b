// The cases of the eviction quality evaluation, as read from a JSON file:
// one long text per case, whose first tokens are the prompt and whose next
// tokens are teacher-forced. The format:
//   {"name": "...", "description": "...",
//    "cases": [{"id": "...", "text": "...", "note": "(optional)"}]}
// Unknown fields are ignored, so generators may record how a case was made.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace clm {

struct EvictCase {
  std::string id;
  std::string text;
  std::string note;
};

struct EvictCaseSet {
  std::string name;
  std::string description;
  std::vector<EvictCase> cases;
};

// Checks the shape: at least one case, ids non-empty and unique, texts
// non-empty. Errors name the case and the field.
Result<EvictCaseSet> parse_evict_cases(std::string_view json_text);
Result<EvictCaseSet> load_evict_cases(const std::string& path);

}  // namespace clm
