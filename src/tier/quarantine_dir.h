// The disk store's quarantine: the directory `quarantine/` inside the
// store, where damaged files are set aside for a person to look at. It only
// ever renames within the store (through directory descriptors, so no path
// is resolved twice and a symbolic link planted as `quarantine` is never
// followed out of it), and it is bounded: past a number of files or bytes
// the oldest are deleted. Its count is taken once when it opens and kept up
// to date, so reading it (as /stats does) costs nothing however full it is.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "util/error.h"

namespace clm {

struct QuarantineLimits {
  std::size_t max_files = 1000;
  uint64_t max_bytes = uint64_t{256} << 20;
};

class QuarantineDir {
 public:
  // Opens store_dir/quarantine, creating it (mode 0700). A symbolic link or
  // a file in its place is removed first (the link itself: nothing it
  // points to is touched). Prunes it to the limits.
  static Result<std::unique_ptr<QuarantineDir>> open(const std::string& store_dir, QuarantineLimits limits);
  ~QuarantineDir();
  QuarantineDir(const QuarantineDir&) = delete;
  QuarantineDir& operator=(const QuarantineDir&) = delete;

  // Moves the store's file `name` into the quarantine as `as`, then prunes.
  // False if it could not be moved (the caller deletes it instead).
  bool admit(const std::string& name, const std::string& as);
  // Files held now whose names end with `suffix` ("" for all).
  std::size_t count(const std::string& suffix = "") const;
  uint64_t bytes() const;

 private:
  struct Held {
    std::string name;
    uint64_t bytes = 0;
  };
  QuarantineDir(int store_fd, int dir_fd, QuarantineLimits limits) : store_fd_(store_fd), dir_fd_(dir_fd), limits_(limits) {}
  void scan();
  void prune_locked();

  int store_fd_;
  int dir_fd_;
  QuarantineLimits limits_;
  mutable std::mutex mu_;
  std::multimap<int64_t, Held> held_;  // by modification time, oldest first
  uint64_t bytes_ = 0;
  int64_t sequence_ = 0;               // orders files admitted within one clock tick
};

}  // namespace clm
