// What a failed system call says: "what: <strerror(errno)>", for the stores'
// messages. Read errno right after the call that failed.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

namespace clm {

inline std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace clm
