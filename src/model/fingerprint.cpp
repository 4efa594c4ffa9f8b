#include "model/fingerprint.h"

#include <memory>
#include <string_view>
#include <type_traits>
#include <variant>

// The state type is only complete with static linking of the API enabled.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace clm {

namespace {

class Hasher {
 public:
  Hasher() { XXH3_64bits_reset(&state_); }
  void bytes(const void* p, std::size_t n) { XXH3_64bits_update(&state_, p, n); }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  // Length first, so that concatenations of different strings differ.
  void string(std::string_view s) {
    value(static_cast<uint64_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void gguf_value(const GgufValue& v) {
    value(static_cast<uint32_t>(v.type));
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::string_view>) {
            string(x);
          } else if constexpr (std::is_same_v<X, std::shared_ptr<GgufArray>>) {
            value(static_cast<uint32_t>(x->elem_type));
            value(static_cast<uint64_t>(x->items.size()));
            for (const GgufValue& item : x->items) gguf_value(item);
          } else if constexpr (std::is_same_v<X, bool>) {
            value(static_cast<uint8_t>(x ? 1 : 0));
          } else {
            value(x);
          }
        },
        v.value);
  }
  uint64_t digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

}  // namespace

uint64_t model_fingerprint(const GgufFile& file) {
  Hasher h;
  // Architecture metadata: the architecture name and every "<arch>." key,
  // in file order. Tokenizer and descriptive keys do not change K/V.
  std::string_view arch;
  if (const GgufValue* a = file.find("general.architecture"); a && a->type == GgufValueType::STRING)
    arch = std::get<std::string_view>(a->value);
  h.string(arch);
  for (const auto& [key, value] : file.metadata()) {
    if (arch.empty() || key.size() <= arch.size() || key.substr(0, arch.size()) != arch || key[arch.size()] != '.')
      continue;
    h.string(key);
    h.gguf_value(value);
  }
  // Tensor directory, then every tensor's bytes.
  h.value(static_cast<uint64_t>(file.tensors().size()));
  for (const GgufTensorInfo& t : file.tensors()) {
    h.string(t.name);
    h.value(static_cast<uint32_t>(t.type));
    h.value(static_cast<uint64_t>(t.dims.size()));
    for (uint64_t d : t.dims) h.value(d);
  }
  for (const GgufTensorInfo& t : file.tensors())
    if (t.data != nullptr) h.bytes(t.data, static_cast<std::size_t>(t.n_bytes));
  return h.digest();
}

}  // namespace clm
