#include "kernels/weight_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace clm {

namespace {
struct Entry {
  uint32_t id;
  WeightTypeInfo info;
};

// Block sizes from the GGUF/ggml format: QK4_0 = QK8_0 = 32, QK_K = 256.
constexpr std::array<Entry, 15> kTypes{{
    {0, {"F32", 1, 4, true}},
    {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},
    {3, {"Q4_1", 32, 20, false}},
    {6, {"Q5_0", 32, 22, false}},
    {7, {"Q5_1", 32, 24, false}},
    {8, {"Q8_0", 32, 34, true}},
    {9, {"Q8_1", 32, 36, false}},
    {10, {"Q2_K", 256, 84, false}},
    {11, {"Q3_K", 256, 110, false}},
    {12, {"Q4_K", 256, 144, true}},
    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},
    {15, {"Q8_K", 256, 292, false}},
    {30, {"BF16", 1, 2, true}},
}};
}  // namespace

std::optional<WeightTypeInfo> weight_type_info(uint32_t type_id) {
  for (const auto& e : kTypes)
    if (e.id == type_id) return e.info;
  return std::nullopt;
}

std::optional<WeightType> parse_weight_type(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const auto& e : kTypes)
    if (e.info.name == upper) return static_cast<WeightType>(e.id);
  return std::nullopt;
}

std::string_view weight_type_name(WeightType t) {
  const auto info = weight_type_info(static_cast<uint32_t>(t));
  return info ? info->name : std::string_view("unknown");
}

}  // namespace clm
