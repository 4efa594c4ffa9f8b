#include "kernels/kv_type.h"

namespace clm {

std::string_view kv_type_name(KvType t) {
  switch (t) {
    case KvType::F16: return "f16";
    case KvType::F32: return "f32";
    case KvType::Q8_0: return "q8_0";
    case KvType::Q4_0: return "q4_0";
    case KvType::Fp8: return "fp8";
  }
  return "unknown";
}

std::optional<KvType> parse_kv_type(std::string_view name) {
  for (int i = 0; i < kKvTypeCount; ++i) {
    const auto t = static_cast<KvType>(i);
    if (kv_type_name(t) == name) return t;
  }
  return std::nullopt;
}

std::string kv_type_unsupported(KvType t, int head_dim) {
  if (t == KvType::Q8_0 && head_dim % q8_group_size(head_dim) != 0)
    return "q8_0 stores a head in groups of " + std::to_string(kQ8GroupSize) +
           " values (or one group below that), and this model's head_dim " + std::to_string(head_dim) +
           " is neither";
  if (t == KvType::Q4_0 && (head_dim % q4_group_size(head_dim) != 0 || head_dim % 2 != 0))
    return "q4_0 stores a head in groups of " + std::to_string(kQ4GroupSize) +
           " values (or one group of an even number of values below that), two values to a byte, and this "
           "model's head_dim " + std::to_string(head_dim) + " is neither";
  return {};
}

std::string kv_types_text(KvTypes t) {
  if (t.k == t.v) return std::string(kv_type_name(t.k));
  return "k=" + std::string(kv_type_name(t.k)) + ",v=" + std::string(kv_type_name(t.v));
}

}  // namespace clm
