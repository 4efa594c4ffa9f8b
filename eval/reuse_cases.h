// The cases of the reuse quality evaluation, as read from a JSON file: per
// case, the prompts that run first (to fill the cache), the prompt then
// asked, and optionally a reference continuation. The format:
//   {"name": "...", "description": "...",
//    "cases": [{"id": "...", "warm": ["text", ...], "ask": "text",
//               "reference": "text (optional)", "note": "(optional)",
//               "warm_bos": false (optional: the warm prompts are chunks
//                                  computed on their own, without BOS)}]}
// Unknown fields are ignored, so generators may record how a case was made.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace clm {

struct ReuseCase {
  std::string id;
  std::vector<std::string> warm;  // run first, in order, to fill the cache
  bool warm_bos = true;           // the warm prompts start with BOS
  std::string ask;
  std::optional<std::string> reference;  // teacher-forced continuation
  std::string note;
};

struct ReuseCaseSet {
  std::string name;
  std::string description;
  std::vector<ReuseCase> cases;
};

// Checks the shape: every required field present with its type, at least
// one case, ids unique, no empty ask. Errors name the case and the field.
Result<ReuseCaseSet> parse_reuse_cases(std::string_view json_text);
Result<ReuseCaseSet> load_reuse_cases(const std::string& path);

}  // namespace clm
