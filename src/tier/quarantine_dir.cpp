#include "tier/quarantine_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "tier/errno_text.h"

namespace clm {

namespace {

constexpr const char* kDirName = "quarantine";

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

Result<std::unique_ptr<QuarantineDir>> QuarantineDir::open(const std::string& store_dir, QuarantineLimits limits) {
  const int store_fd = ::open(store_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (store_fd < 0) return fail(errno_text("open " + store_dir));
  struct stat st {};
  if (::fstatat(store_fd, kDirName, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    // Not a directory of ours (a link planted there, a stray file): gone.
    if (::unlinkat(store_fd, kDirName, 0) != 0) {
      const std::string message = errno_text("remove " + store_dir + "/" + kDirName);
      ::close(store_fd);
      return fail(message);
    }
  }
  if (::mkdirat(store_fd, kDirName, 0700) != 0 && errno != EEXIST) {
    const std::string message = errno_text("mkdir " + store_dir + "/" + kDirName);
    ::close(store_fd);
    return fail(message);
  }
  const int dir_fd = ::openat(store_fd, kDirName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    const std::string message = errno_text("open " + store_dir + "/" + kDirName);
    ::close(store_fd);
    return fail(message);
  }
  std::unique_ptr<QuarantineDir> q(new QuarantineDir(store_fd, dir_fd, limits));
  std::lock_guard lock(q->mu_);
  q->scan();
  q->prune_locked();
  return q;
}

QuarantineDir::~QuarantineDir() {
  ::close(dir_fd_);
  ::close(store_fd_);
}

void QuarantineDir::scan() {
  DIR* d = ::fdopendir(::dup(dir_fd_));
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    held_.emplace(mtime_ns(st), Held{name, static_cast<uint64_t>(st.st_size)});
    bytes_ += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
}

bool QuarantineDir::admit(const std::string& name, const std::string& as) {
  struct stat st {};
  if (::fstatat(store_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (::renameat(store_fd_, name.c_str(), dir_fd_, as.c_str()) != 0) return false;
  std::lock_guard lock(mu_);
  // The rename replaced a file of the same name, if one was held.
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->second.name == as) {
      bytes_ -= it->second.bytes;
      held_.erase(it);
      break;
    }
  }
  // Newest last, whatever its modification time says: it was set aside now.
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const uint64_t size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  held_.emplace(now + (++sequence_), Held{as, size});
  bytes_ += size;
  prune_locked();
  return true;
}

void QuarantineDir::prune_locked() {
  while (!held_.empty() && (held_.size() > limits_.max_files || bytes_ > limits_.max_bytes)) {
    auto oldest = held_.begin();
    ::unlinkat(dir_fd_, oldest->second.name.c_str(), 0);
    bytes_ -= oldest->second.bytes;
    held_.erase(oldest);
  }
}

std::size_t QuarantineDir::count(const std::string& suffix) const {
  std::lock_guard lock(mu_);
  if (suffix.empty()) return held_.size();
  std::size_t n = 0;
  for (const auto& [t, h] : held_) n += h.name.ends_with(suffix);
  return n;
}

uint64_t QuarantineDir::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace clm
