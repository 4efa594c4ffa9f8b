#include "util/file_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace clm {

namespace {

// Closes the descriptor on every path out of open().
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

std::string errno_text(const std::string& what, const std::string& path, int err) {
  return what + " '" + path + "': " + std::strerror(err);
}

Status read_all(int fd, std::byte* dst, std::size_t size, const std::string& path,
                const std::function<void(float)>& on_progress) {
  constexpr std::size_t kChunk = std::size_t{64} << 20;
  std::size_t done = 0;
  while (done < size) {
    const std::size_t want = std::min(kChunk, size - done);
    const ssize_t got = ::pread(fd, dst + done, want, static_cast<off_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail(errno_text("cannot read", path, errno));
    }
    if (got == 0) return fail("'" + path + "' became shorter while it was read");
    done += static_cast<std::size_t>(got);
    if (on_progress) on_progress(static_cast<float>(done) / static_cast<float>(size));
  }
  return {};
}

}  // namespace

std::string_view file_load_name(FileLoad load) { return load == FileLoad::Map ? "mmap" : "copy"; }

Result<FileImage> FileImage::open(const std::string& path, FileLoad load,
                                  const std::function<void(float)>& on_progress) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno_text("cannot open", path, errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(errno_text("cannot stat", path, errno));
  if (!S_ISREG(st.st_mode)) return fail("'" + path + "' is not a regular file");

  FileImage image;
  image.path_ = path;
  image.load_ = load;
  image.size_ = static_cast<std::size_t>(st.st_size);
  if (image.size_ == 0) return image;

  if (load == FileLoad::Map) {
    void* p = ::mmap(nullptr, image.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return fail(errno_text("cannot map", path, errno));
    image.data_ = static_cast<const std::byte*>(p);
  } else {
    auto region = HugePageRegion::allocate(image.size_);
    if (!region) return fail(path + ": " + region.error().message);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    auto read = read_all(fd, region->data(), image.size_, path, on_progress);
    if (!read) return std::unexpected(read.error());
    // Same promise as the map: nobody writes the weights.
    auto ro = region->make_read_only();
    if (!ro) return fail(path + ": " + ro.error().message);
    image.copy_ = std::move(*region);
    image.data_ = image.copy_.data();
  }
  return image;
}

void FileImage::release() {
  if (load_ == FileLoad::Map && data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  copy_ = HugePageRegion();
  data_ = nullptr;
  size_ = 0;
}

FileImage::FileImage(FileImage&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      copy_(std::move(other.copy_)),
      load_(other.load_),
      path_(std::move(other.path_)) {}

FileImage& FileImage::operator=(FileImage&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    copy_ = std::move(other.copy_);
    load_ = other.load_;
    path_ = std::move(other.path_);
  }
  return *this;
}

FileImage::~FileImage() { release(); }

}  // namespace clm
