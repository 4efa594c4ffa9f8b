// tokenizer.json (and tokenizer_config.json) loading on arbitrary bytes, as
// `make-model --tokenizer-json` reads files from a model repository. The
// input is split at its first NUL byte: before it tokenizer.json, after it
// (when there is one) tokenizer_config.json.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/hf_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  std::optional<std::string_view> config;
  if (nul != std::string_view::npos) config = input.substr(nul + 1);
  (void)clm::parse_hf_tokenizer(input.substr(0, nul), config);
  (void)clm::pre_name_of_split_regex(input);
  return 0;
}
