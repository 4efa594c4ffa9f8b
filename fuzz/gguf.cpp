// The GGUF reader on arbitrary bytes: a model file is untrusted input. What
// parses is then read as `run` and `serve` read it: the model config, the
// tokenizer (encoding and decoding a short text) and the fingerprint.
#include <cstddef>
#include <cstdint>
#include <span>

#include "model/fingerprint.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
  const clm::Result<clm::GgufFile> file = clm::GgufFile::parse(bytes);
  if (!file) return 0;
  (void)clm::read_model_config(*file);
  (void)clm::model_fingerprint(*file);
  (void)file->get_string_array("tokenizer.ggml.tokens");
  (void)file->get_float_array("tokenizer.ggml.scores");
  (void)file->get_int_array("tokenizer.ggml.token_type");
  if (auto tokenizer = clm::Tokenizer::from_gguf(*file)) {
    const std::vector<std::int32_t> ids = (*tokenizer)->encode("Hello, world! <s> 123", true, true);
    (void)(*tokenizer)->decode(ids);
  }
  return 0;
}
