// Loading a case file of an evaluation: read it whole, parse it with the
// evaluation's own parser, and name the file in any error. A set without a
// name of its own is named after its path.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "util/error.h"

namespace clm {

template <class CaseSet, class Parse>
Result<CaseSet> load_case_file(const std::string& path, Parse parse) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read cases file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  Result<CaseSet> set = parse(ss.str());
  if (!set) return fail("cases file " + path + ": " + set.error().message);
  if (set->name.empty()) set->name = path;
  return set;
}

}  // namespace clm
