// Loading a case file of an evaluation: read it whole, parse it with the
// evaluation's own parser, and name the file in any error. A set without a
// name of its own is named after its path.
#pragma once

#include <cstddef>
#include <string>

#include "util/bounded_file.h"
#include "util/error.h"

namespace clm {

// Case sets are JSON of some MiB at most; far past that a file is a mistake.
inline constexpr std::size_t kMaxCaseFileBytes = 64 * kMiB;

template <class CaseSet, class Parse>
Result<CaseSet> load_case_file(const std::string& path, Parse parse) {
  auto text = read_bounded_file(path, kMaxCaseFileBytes, "cases file");
  if (!text) return std::unexpected(text.error());
  Result<CaseSet> set = parse(*text);
  if (!set) return fail("cases file " + path + ": " + set.error().message);
  if (set->name.empty()) set->name = path;
  return set;
}

}  // namespace clm
