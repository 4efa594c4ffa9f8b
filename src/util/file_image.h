// The bytes of a whole file, read-only, in one of two homes:
//  - Map: the file's page-cache pages mapped in place. Nothing is copied,
//    processes share the pages, loading is instant.
//  - Copy: read once into private memory advised for transparent huge pages.
//    Costs a read of the file and its size in private memory, but streaming
//    the weights for every decoded token can be much faster there: on the
//    virtual machine of docs/BENCHMARKS.md a 1B F16 model decoded up to ~2x
//    faster than from the map (the cause lies in the file-backed mapping,
//    not the page size: a small-page copy was nearly as fast).
// Either way the bytes are used as they are (no repacking) and are
// write-protected. Move-only; released on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "util/error.h"
#include "util/huge_page_region.h"

namespace clm {

enum class FileLoad { Map, Copy };

class FileImage {
 public:
  // on_progress (optional) is called with a fraction in [0, 1] while a Copy
  // reads the file.
  static Result<FileImage> open(const std::string& path, FileLoad load = FileLoad::Map,
                                const std::function<void(float)>& on_progress = {});

  FileImage() = default;
  FileImage(FileImage&& other) noexcept;
  FileImage& operator=(FileImage&& other) noexcept;
  FileImage(const FileImage&) = delete;
  FileImage& operator=(const FileImage&) = delete;
  ~FileImage();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  FileLoad load() const { return load_; }

 private:
  void release();

  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  HugePageRegion copy_;  // holds the bytes of a Copy; empty for a Map
  FileLoad load_ = FileLoad::Map;
  std::string path_;
};

std::string_view file_load_name(FileLoad load);

}  // namespace clm
