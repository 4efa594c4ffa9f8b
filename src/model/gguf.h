// A GGUF file (versions 2 and 3), memory-mapped and validated. Every count,
// offset, size and string length is checked against the file before it is
// used; parse() of hostile bytes returns an error naming what is wrong and
// at which byte offset, and never allocates by an unchecked number.
// Strings and tensor data are views into the mapped bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernels/weight_type.h"
#include "util/error.h"
#include "util/file_image.h"

namespace clm {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType t);

struct GgufValue;

struct GgufArray {
  GgufValueType elem_type = GgufValueType::UINT8;
  std::vector<GgufValue> items;
};

struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  // Integers are held widened (signed types in int64_t, unsigned in uint64_t),
  // floats in double; the original type is `type`.
  std::variant<uint64_t, int64_t, double, bool, std::string_view, std::shared_ptr<GgufArray>> value;
};

struct GgufTensorInfo {
  std::string name;
  WeightType type = WeightType::F32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (row) length
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t offset = 0;         // absolute byte offset in the file
  const std::byte* data = nullptr;
};

class GgufFile {
 public:
  // Loads (see FileImage: mapped in place by default) and parses a file.
  static Result<GgufFile> open(const std::string& path, FileLoad load = FileLoad::Map,
                               const std::function<void(float)>& on_progress = {});
  // Parses bytes the caller keeps alive (tests, fuzzing). No copy.
  static Result<GgufFile> parse(std::span<const std::byte> bytes);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return path_; }

  const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed access. Integer getters accept any integer type whose value fits;
  // float getters accept float32/float64. Errors name the key and types.
  Result<std::string_view> get_string(std::string_view key) const;
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* tensor(std::string_view name) const;

  std::span<const std::byte> bytes() const { return bytes_; }
  // How open() holds the bytes (parse()'s caller holds them: Map).
  FileLoad load() const { return file_ ? file_->load() : FileLoad::Map; }

 private:
  std::shared_ptr<FileImage> file_;  // empty for parse()
  std::span<const std::byte> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace clm
