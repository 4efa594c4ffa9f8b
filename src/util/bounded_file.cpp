#include "util/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace clm {

namespace {

std::unexpected<Error> too_large(const std::string& what, const std::string& size, std::size_t max_bytes) {
  return fail(ErrorKind::TooLarge, what + " has " + size + " bytes; at most " + std::to_string(max_bytes) + " are read");
}

// Reads until end of file or until more than `max_bytes` arrived.
Result<std::string> read_all(int fd, std::size_t max_bytes, const std::string& what, std::size_t expected) {
  std::string out;
  out.resize(expected);
  std::size_t have = 0;
  for (;;) {
    // One byte of room past the bound tells a file that grew from one that ended there.
    if (have == out.size()) {
      if (out.size() > max_bytes) return too_large(what, "over " + std::to_string(max_bytes), max_bytes);
      out.resize(std::min(max_bytes + 1, std::max<std::size_t>(out.size() * 2, 64 * 1024)));
    }
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  if (have > max_bytes) return too_large(what, "over " + std::to_string(max_bytes), max_bytes);
  out.resize(have);
  return out;
}

}  // namespace

Result<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail("cannot open " + what + " " + path + ": " + std::strerror(errno));
  struct stat st {};
  Result<std::string> out = fail("");
  if (::fstat(fd, &st) != 0) {
    out = fail("cannot read " + what + " " + path + ": " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    out = fail(what + " " + path + " is not a regular file");
  } else if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    out = too_large(what + " " + path, std::to_string(st.st_size), max_bytes);
  } else {
    out = read_all(fd, max_bytes, what + " " + path, static_cast<std::size_t>(st.st_size));
  }
  ::close(fd);
  return out;
}

Result<std::string> read_bounded_stdin(std::size_t max_bytes, const std::string& what) {
  return read_all(STDIN_FILENO, max_bytes, what, 0);
}

}  // namespace clm
