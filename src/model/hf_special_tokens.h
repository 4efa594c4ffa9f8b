// The special-token half of reading a Hugging Face tokenizer, as llama.cpp's
// converter does it: BOS/EOS/UNK/PAD ids (looked up among tokenizer.json's
// added tokens by the texts tokenizer_config.json names), whether BOS and EOS
// are added (first from the post-processor: RobertaProcessing adds both, a
// TemplateProcessing adds what its single-sequence template starts or ends
// with; then the config's add_bos_token / add_eos_token win), and the chat
// template.
#pragma once

#include <nlohmann/json.hpp>

#include "model/vocab_metadata.h"
#include "util/error.h"

namespace clm {

// `tokenizer` is the parsed tokenizer.json, `config` the parsed
// tokenizer_config.json or nullptr. Fills the special ids, add_bos, add_eos
// and the chat templates of `vocab`, whose tokens are already read.
Status apply_hf_special_tokens(const nlohmann::json& tokenizer, const nlohmann::json* config, VocabMetadata& vocab);

}  // namespace clm
