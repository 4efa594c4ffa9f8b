// Reads a Hugging Face tokenizer (tokenizer.json, optionally with its
// tokenizer_config.json) into GGUF vocabulary metadata, written the way
// llama.cpp's converter writes it: tokenizer.ggml.model "gpt2", the tokens in
// id order (holes become "[PADn]", unused), the merges as "left right" lines,
// added tokens as control (special) or user-defined (not special) tokens, the
// pre-tokenizer named after the split regex, and the special tokens, the
// add-BOS/EOS flags and the chat template from the config and the
// post-processor.
//
// Only byte-level BPE vocabularies whose split regex is a known one are
// accepted (Llama-3's -> "llama-bpe", Qwen2's -> "qwen2"); anything else is
// refused with a message naming what is not supported.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/vocab_metadata.h"
#include "util/error.h"

namespace clm {

// The texts of tokenizer.json and, if there is one, tokenizer_config.json.
Result<VocabMetadata> parse_hf_tokenizer(std::string_view tokenizer_json,
                                         std::optional<std::string_view> tokenizer_config_json);

// Reads the files; an empty config_path means no tokenizer_config.json.
// Errors name the file they come from.
Result<VocabMetadata> load_hf_tokenizer(const std::string& tokenizer_json_path, const std::string& config_path);

// The tokenizer.ggml.pre name of a pre-tokenizer split regex, as written in
// tokenizer.json; nullopt for a regex this reader does not know.
std::optional<std::string_view> pre_name_of_split_regex(std::string_view regex);

}  // namespace clm
