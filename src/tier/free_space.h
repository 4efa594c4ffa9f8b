// Whether a filesystem is too full for a store to open. Under a few MiB
// free, SQLite cannot even open a database in WAL mode (it must create its
// -wal and -shm files). A store that fails to open then is not damaged: it is
// left as it is, and the failure is ErrorKind::Unavailable, so that the
// server runs without that tier and the next start uses it again.
#pragma once

#include <filesystem>
#include <string>

#include "util/error.h"

namespace clm {

bool free_space_is_low(const std::filesystem::path& dir);

// The error for a store at `what` that could not be opened (`problem`) on a
// filesystem with too little space: it says the store is left as it is.
std::unexpected<Error> store_unavailable_for_space(const std::string& what, const std::string& problem);

}  // namespace clm
