// A small, deterministic tokenizer vocabulary for synthetic models (make-model
// and tests): byte fallback so any text encodes, plus pieces learned by BPE
// over a built-in English text, padded with unused tokens to the asked size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf_writer.h"
#include "util/error.h"

namespace clm {

inline constexpr int kMinSyntheticVocab = 300;

struct SyntheticVocab {
  std::string model;  // "llama" or "gpt2"
  std::string pre;    // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<float> scores;  // llama only
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // gpt2 only, "left right"
  int32_t bos = -1;
  int32_t eos = -1;
};

// model "llama": <unk>, <s>, </s>, <0x00>..<0xFF>, the text's characters,
// then learned "▁"-style pieces (score falls with learning order).
// model "gpt2" (qwen2 pre-tokenizer): the 256 byte-level symbols, learned
// merges, then <|endoftext|> (BOS/EOS), <|im_start|>, <|im_end|> as control.
// Both are filled up to exactly n_vocab with "<unused_N>" tokens.
// Fails for another model or n_vocab below kMinSyntheticVocab.
Result<SyntheticVocab> make_synthetic_vocab(std::string_view model, int n_vocab);

// Writes the tokenizer.ggml.* keys a Tokenizer reads back.
void add_vocab_metadata(GgufWriter& writer, const SyntheticVocab& vocab);

}  // namespace clm
