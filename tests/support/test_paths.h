// Where tests find the shared reference data and the built CLI.
#pragma once

#include <string>

namespace clm::test {

// Directory of the shared reference data (models/, golden/, testdata/).
std::string shared_dir();
// Path of a file under the shared directory; the test fails (not skips) if
// it does not exist.
std::string shared_file(const std::string& relative);
// Path of the clmcache executable built alongside the tests.
std::string cli_binary();
// A fresh, empty temporary directory removed at process exit.
std::string temp_dir();

}  // namespace clm::test
