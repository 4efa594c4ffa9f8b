#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace clm::test {

std::string shared_dir() {
  if (const char* env = std::getenv("CLMCACHE_SHARED"); env != nullptr && *env != '\0') return env;
  return CLMCACHE_SHARED_DIR;
}

std::string shared_file(const std::string& relative) {
  const std::string path = shared_dir() + "/" + relative;
  EXPECT_TRUE(std::filesystem::exists(path)) << "missing reference file: " << path;
  return path;
}

std::string cli_binary() { return CLMCACHE_BINARY; }

namespace {
struct TempDirs {
  std::mutex mu;
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}
}  // namespace

std::string temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "clmcache-test-XXXXXX").string();
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr) << "mkdtemp failed";
  auto& dirs = temp_dirs();
  std::lock_guard<std::mutex> lock(dirs.mu);
  dirs.dirs.emplace_back(tmpl);
  return tmpl;
}

}  // namespace clm::test
