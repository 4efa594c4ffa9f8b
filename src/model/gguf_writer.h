// Builds a GGUF v3 file in memory and writes it crash-safely (temp file,
// fsync, rename). Used by make-model and by tests that craft files.
// serialize() encodes exactly what was added, even an inconsistent file (tests
// craft malformed input that way); write() first refuses what validate() does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/weight_type.h"
#include "model/gguf.h"
#include "util/error.h"

namespace clm {

class GgufWriter {
 public:
  void set_alignment(uint64_t alignment) { alignment_ = alignment; }

  void add_u8(std::string key, uint8_t v);
  void add_u32(std::string key, uint32_t v);
  void add_i32(std::string key, int32_t v);
  void add_u64(std::string key, uint64_t v);
  void add_i64(std::string key, int64_t v);
  void add_f32(std::string key, float v);
  void add_f64(std::string key, double v);
  void add_bool(std::string key, bool v);
  void add_string(std::string key, std::string v);
  void add_string_array(std::string key, const std::vector<std::string>& v);
  void add_f32_array(std::string key, const std::vector<float>& v);
  void add_i32_array(std::string key, const std::vector<int32_t>& v);
  // Any value, arrays of arrays included. Fails (adding nothing) if the
  // variant does not hold what `type` says, an integer does not fit its
  // type, or an array item's type differs from the array's element type.
  Status add_value(std::string key, const GgufValue& v);

  // dims in ggml order (dims[0] = row length). data must hold exactly the
  // tensor's byte size for its type.
  void add_tensor(std::string name, WeightType type, std::vector<uint64_t> dims, std::vector<std::byte> data);

  // Alignment a nonzero power of two, keys and tensor names unique and
  // non-empty, each tensor's data exactly its byte size.
  Status validate() const;
  // general.alignment is emitted when the alignment is not the default 32
  // and no key of that name was added.
  std::vector<std::byte> serialize() const;
  // Writes path + ".tmp.<pid>", fsyncs it, renames it over path, and fsyncs
  // the directory, so that path holds either the old or the whole new file.
  Status write(const std::string& path) const;

 private:
  struct Kv {
    std::string key;
    GgufValueType type;
    std::vector<std::byte> payload;  // encoded value bytes after the type tag
  };
  struct Tensor {
    std::string name;
    WeightType type;
    std::vector<uint64_t> dims;
    std::vector<std::byte> data;
  };
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  uint64_t alignment_ = 32;
};

}  // namespace clm
