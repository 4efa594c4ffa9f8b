// A vocabulary as the tokenizer.ggml.* keys of a GGUF file hold it: what
// make-model writes, whether the vocabulary was made up (synthetic_vocab.h)
// or read from a Hugging Face tokenizer.json (hf_tokenizer_json.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf_writer.h"

namespace clm {

// The key a vocabulary's text normalizer is written under: clmcache's own,
// since GGUF defines none.
inline constexpr const char* kNormalizerKey = "clmcache.tokenizer.normalizer";

struct VocabMetadata {
  std::string model;  // tokenizer.ggml.model: "llama" or "gpt2"
  std::string pre;    // tokenizer.ggml.pre; empty: not written
  // kNormalizerKey: how text is normalized before it is split, "NFC" or
  // empty (none; not written). llama.cpp's files have no such key and it
  // normalizes nothing.
  std::string normalizer;
  std::vector<std::string> tokens;
  std::vector<float> scores;  // SentencePiece only; empty: not written
  std::vector<int32_t> types;  // TokenType values, one per token
  std::vector<std::string> merges;  // byte-level BPE only, "left right"
  // Special token ids; -1: not written.
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t eot = -1;
  int32_t pad = -1;
  // Not written when unset: the reader then applies its family's default.
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  std::string chat_template;  // tokenizer.chat_template; empty: not written
  // Further named templates: tokenizer.chat_template.NAME, listed in
  // tokenizer.chat_templates.
  std::vector<std::pair<std::string, std::string>> named_chat_templates;
};

// Writes the tokenizer.ggml.* (and tokenizer.chat_template*) keys.
void add_vocab_metadata(GgufWriter& writer, const VocabMetadata& vocab);

}  // namespace clm
