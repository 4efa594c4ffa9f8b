// The tensor element types of GGUF (ggml type ids) and their block geometry.
// A quantized row of `n` elements is n / block_elems blocks of block_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace clm {

enum class WeightType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct WeightTypeInfo {
  std::string_view name;
  std::size_t block_elems;  // elements per block (1 for plain floats)
  std::size_t block_bytes;  // bytes per block
  bool supported;           // the engine can compute with it
};

// Info for a raw ggml type id; nullopt for ids this build does not know.
std::optional<WeightTypeInfo> weight_type_info(uint32_t type_id);
// Parses "f32", "F16", "q8_0", ... ; nullopt if unknown.
std::optional<WeightType> parse_weight_type(std::string_view name);
std::string_view weight_type_name(WeightType t);

}  // namespace clm
