#include "tier/disk_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "tier/entry_codec.h"
#include "tier/errno_text.h"
#include "tier/free_space.h"
#include "util/hex.h"

namespace clm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexName = "index.sqlite";
constexpr const char* kMarkerName = ".clmcache-disk-cache";
constexpr const char* kEntrySuffix = ".safetensors";
constexpr const char* kTempSuffix = ".tmp";
// No entry file is larger (a block of the largest geometry the codec accepts
// is far smaller); a bigger file is not read into memory.
constexpr uint64_t kMaxEntryFileBytes = 1ull << 32;

bool is_empty_directory(const std::string& dir) {
  std::error_code ec;
  return fs::is_empty(dir, ec) && !ec;
}

// Makes `dir` a store, or says why it is not one. A new directory is made
// owner-only (it will hold users' conversations); an existing one keeps its
// mode (it may be shared on purpose) and must be empty or already a store.
Status adopt_directory(const std::string& dir) {
  struct stat st {};
  const std::string marker = dir + "/" + kMarkerName;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return fail(errno_text("disk cache " + dir));
    const fs::path parent = fs::path(dir).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return fail("cannot create " + parent.string() + ": " + ec.message());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail(errno_text("mkdir " + dir));
  } else if (!S_ISDIR(st.st_mode)) {
    return fail(dir + " is not a directory; it is left as it is");
  } else if (::access(marker.c_str(), F_OK) == 0) {
    return {};
  } else if (!is_empty_directory(dir) && ::access((dir + "/" + kIndexName).c_str(), F_OK) != 0) {
    return fail(dir + " holds files and is not a clmcache disk cache (it has no " + kMarkerName +
                "); it is left as it is: name an empty or new directory");
  }
  // New, empty, or made by a version before the marker: marked now.
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  const auto unmarked = [&dir] {
    const std::string why = errno_text("cannot mark " + dir + " as a disk cache");
    return errno == ENOSPC || errno == EDQUOT ? fail(ErrorKind::Unavailable, why + "; it is left as it is") : fail(why);
  };
  if (fd < 0) return unmarked();
  constexpr std::string_view kText = "clmcache disk cache\n";
  const bool written = ::write(fd, kText.data(), kText.size()) == static_cast<ssize_t>(kText.size());
  if (!written) {
    const int write_errno = errno;
    ::close(fd);
    ::unlink(marker.c_str());  // an empty marker would adopt the directory unchecked next time
    errno = write_errno;
    return unmarked();
  }
  ::close(fd);
  return {};
}

// The key an entry file name stands for, when it is one.
std::optional<BlockKey> key_of_file(const std::string& name) {
  const std::string suffix = kEntrySuffix;
  if (name.size() != 16 + suffix.size() || !name.ends_with(suffix)) return std::nullopt;
  BlockKey key = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + 16, key, 16);
  if (ec != std::errc() || end != name.data() + 16 || DiskStore::file_name(key) != name) return std::nullopt;
  return key;
}

// Temporary files are named KEY.PID.N.tmp (KEY in 16 hex digits); one whose
// writer is dead is a leftover of a crash. Nothing else is ever deleted.
bool temp_of_dead_writer(const std::string& name) {
  if (!name.ends_with(kTempSuffix) || name.size() < 16 || !key_of_file(name.substr(0, 16) + kEntrySuffix))
    return false;
  const std::size_t first = 16;
  if (name[first] != '.') return false;
  const std::size_t second = name.find('.', first + 1);
  if (second == std::string::npos) return false;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(name.data() + first + 1, name.data() + second, pid);
  if (ec != std::errc() || end != name.data() + second || pid <= 0) return false;
  return pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH);
}

Status write_all(int fd, std::span<const std::byte> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(errno_text("write"));
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return fail(errno_text("open " + path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return fail(errno_text("fsync " + path));
  return {};
}

std::optional<std::vector<std::byte>> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::optional<std::vector<std::byte>> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= kMaxEntryFileBytes) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
    out = std::move(bytes);
  }
  ::close(fd);
  return out;
}

// Reads exactly out.size() bytes at offset; false on a short read or error.
// The kernel copies into a small buffer that stays hot from read to read,
// and the copy into `out` (a pool block) runs in user space. Reading straight
// into the pool looked cheaper but was not: on a paravirtualised VM, the
// kernel's writes into 73 MB of pool blocks ran at about 0.5 GB/s (every
// page costs the hypervisor work), against 5 GB/s through this buffer. An
// extra copy of 64 KiB that sits in L2 costs little anywhere else.
bool pread_all(int fd, uint64_t offset, std::span<std::byte> out) {
  constexpr std::size_t kStageBytes = 64 * 1024;
  thread_local std::vector<std::byte> stage(kStageBytes);
  std::size_t done = 0;
  while (done < out.size()) {
    const std::size_t want = std::min(kStageBytes, out.size() - done);
    const ssize_t n = ::pread(fd, stage.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    std::memcpy(out.data() + done, stage.data(), static_cast<std::size_t>(n));
    done += static_cast<std::size_t>(n);
  }
  return true;
}

int64_t mtime_ms(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

}  // namespace

std::string DiskStore::file_name(BlockKey key) {
  return hex64(key) + kEntrySuffix;
}

Result<std::unique_ptr<DiskStore>> DiskStore::open(const std::string& dir, DiskTierOptions options) {
  if (dir.empty()) return fail("the disk cache directory is empty");
  if (auto adopted = adopt_directory(dir); !adopted) return std::unexpected(adopted.error());
  auto quarantine = QuarantineDir::open(dir, {});
  if (!quarantine) return std::unexpected(quarantine.error());

  const std::string index = dir + "/" + kIndexName;
  // An index that is a link would have its target written: the link alone
  // goes to the quarantine, and the index is rebuilt from the files.
  struct stat index_st {};
  if (::lstat(index.c_str(), &index_st) == 0 && !S_ISREG(index_st.st_mode)) {
    std::fprintf(stderr, "clmcache: disk cache %s: %s is not a regular file; set aside, rebuilding the index\n",
                 dir.c_str(), kIndexName);
    if (!(*quarantine)->admit(kIndexName, "index-" + std::to_string(::time(nullptr)) + ".not-a-file"))
      return fail(errno_text("cannot set aside " + index));
  }
  std::unique_ptr<DiskStore> store;
  for (int attempt = 0; attempt < 2 && !store; ++attempt) {
    std::string problem;
    if (auto db = SqliteDb::open(index)) {
      std::unique_ptr<DiskStore> opened(new DiskStore(dir, options, std::move(*db)));
      if (auto schema = opened->init_schema()) store = std::move(opened);
      else problem = schema.error().message;
    } else {
      problem = db.error().message;
    }
    if (store) break;
    // Without space the index cannot open, but it is not damaged: set aside,
    // it would be rebuilt from the files for nothing. The store stays as it
    // is for the next start, and the server runs without it.
    if (free_space_is_low(dir)) return store_unavailable_for_space("the disk cache index " + index, problem);
    if (attempt == 1) return fail("cannot open the disk cache index " + index + ": " + problem);
    // The index is only a summary of the files: set the damaged one aside
    // and rebuild it from them.
    std::fprintf(stderr, "clmcache: disk cache %s: the index is unusable (%s); rebuilding it from the files\n",
                 dir.c_str(), problem.c_str());
    const std::string aside = "index-" + std::to_string(::time(nullptr)) + ".sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string from = std::string(kIndexName) + suffix;
      if (!(*quarantine)->admit(from, aside + suffix) && errno != ENOENT)
        return fail(errno_text("cannot set aside the damaged index " + dir + "/" + from));
    }
  }
  store->quarantine_ = std::move(*quarantine);
  std::lock_guard lock(store->mu_);
  store->reconcile();
  return store;
}

void DiskStore::reconcile() {
  std::map<BlockKey, uint64_t> files;  // entry files present: key -> size
  std::error_code ec;
  for (const fs::directory_entry& item : fs::directory_iterator(location_, ec)) {
    if (!item.is_regular_file(ec)) continue;
    const std::string name = item.path().filename().string();
    if (temp_of_dead_writer(name)) {
      ::unlink(item.path().c_str());
    } else if (auto key = key_of_file(name)) {
      files[*key] = item.file_size(ec);
    }
  }
  for (const StoredEntry& row : all_rows()) {
    if (!find_row(row.key)) continue;  // went with a parent
    auto file = files.find(row.key);
    if (file == files.end()) {
      std::fprintf(stderr, "clmcache: disk cache %s: index row %016llx has no file; dropped\n", location_.c_str(),
                   static_cast<unsigned long long>(row.key));
      remove_subtree(row.key, false);
    } else if (file->second != row.size) {
      quarantine_locked(row, "its size differs from the index");
    }
    if (file != files.end()) files.erase(file);
  }
  // Files without a row: written just before a crash, or the index was lost.
  const int64_t now = now_ms();
  for (const auto& [key, size] : files) {
    const std::string name = file_name(key);
    const std::optional<std::vector<std::byte>> bytes = read_file(path(name));
    if (!bytes) continue;  // removed meanwhile (a dependent of a dropped row)
    auto entry = decode_entry(*bytes);
    if (!entry || entry->key != key) {
      quarantine_file(name, entry ? "the file holds another key" : entry.error().message);
      ++counters_.quarantined;
      continue;
    }
    StoredEntry row;
    row.key = key;
    row.parent = entry->parent;
    row.fingerprint = entry->model_fingerprint;
    row.file = name;
    row.size = bytes->size();
    row.checksum = entry_checksum(*entry);
    row.created_ms = mtime_ms(path(name));
    row.last_access_ms = now;
    row.ttl_s = options_.ttl_s;
    if (auto inserted = insert_row(row, std::nullopt); !inserted)
      std::fprintf(stderr, "clmcache: disk cache %s: %s\n", location_.c_str(), inserted.error().message.c_str());
  }
  drop_orphans();
  gc_locked();
}

Status DiskStore::place_bytes(StoredEntry& row, std::span<const std::byte> bytes) {
  row.file = file_name(row.key);
  char unique[64];
  std::snprintf(unique, sizeof unique, ".%d.%llu", static_cast<int>(getpid()),
                static_cast<unsigned long long>(temp_counter_.fetch_add(1)));
  const std::string final_path = path(row.file);
  const std::string temp = path(row.file.substr(0, 16) + unique + kTempSuffix);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fail(errno_text("create " + temp));
  Status written = write_all(fd, bytes);
  if (written && ::fsync(fd) != 0) written = fail(errno_text("fsync " + temp));
  if (::close(fd) != 0 && written) written = fail(errno_text("close " + temp));
  if (written && ::rename(temp.c_str(), final_path.c_str()) != 0) written = fail(errno_text("rename " + temp));
  if (!written) {
    ::unlink(temp.c_str());
    return written;
  }
  // The rename is durable once the directory is: only then does the index
  // point at the file.
  return fsync_path(location_, O_RDONLY | O_DIRECTORY);
}

std::optional<std::vector<std::byte>> DiskStore::load_bytes(const StoredEntry& row) {
  // The name is rebuilt from the key: an index edited by hand cannot point
  // outside the directory.
  return read_file(path(file_name(row.key)));
}

bool DiskStore::visit_bytes(const StoredEntry& row, const BytesVisitor& visit) {
  const std::string file = path(file_name(row.key));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st{};
  const bool readable =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= kMaxEntryFileBytes;
  // The K/V goes to its destination (a pool block) in 64 KiB pieces through
  // pread_all's hot buffer: no whole-entry buffer to fault in and copy again.
  if (readable)
    visit(static_cast<uint64_t>(st.st_size),
          [fd](uint64_t offset, std::span<std::byte> out) { return pread_all(fd, offset, out); });
  ::close(fd);
  return readable;
}

void DiskStore::drop_bytes(const StoredEntry& row) { ::unlink(path(file_name(row.key)).c_str()); }

void DiskStore::quarantine_bytes(const StoredEntry& row, const std::string& reason) {
  quarantine_file(file_name(row.key), reason);
}

void DiskStore::quarantine_file(const std::string& name, const std::string& reason) {
  if (!quarantine_->admit(name, name)) ::unlink(path(name).c_str());
  std::fprintf(stderr, "clmcache: disk cache %s: quarantined %s: %s\n", location_.c_str(), name.c_str(),
               reason.c_str());
}

std::size_t DiskStore::quarantine_size() { return quarantine_->count(kEntrySuffix); }

uint64_t DiskStore::free_bytes() {
  struct statvfs fs_info{};
  if (::statvfs(location_.c_str(), &fs_info) != 0) return 0;
  return static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
}

}  // namespace clm
