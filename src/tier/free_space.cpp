#include "tier/free_space.h"

#include <sys/statvfs.h>

#include <cstdint>

namespace clm {

bool free_space_is_low(const std::filesystem::path& dir) {
  constexpr uint64_t kFloor = uint64_t{4} << 20;
  struct statvfs fs_info {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs_info) != 0) return false;
  return static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize < kFloor;
}

std::unexpected<Error> store_unavailable_for_space(const std::string& what, const std::string& problem) {
  return fail(ErrorKind::Unavailable,
              "cannot open " + what + " (" + problem + "): the disk is nearly full; it is left as it is");
}

}  // namespace clm
