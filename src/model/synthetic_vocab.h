// A small, deterministic tokenizer vocabulary for synthetic models (make-model
// and tests): byte fallback so any text encodes, plus pieces learned by BPE
// over a built-in English text, padded with unused tokens to the asked size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/vocab_metadata.h"
#include "util/error.h"

namespace clm {

inline constexpr int kMinSyntheticVocab = 300;

// A synthetic vocabulary is plain vocabulary metadata; the name says where
// it came from.
using SyntheticVocab = VocabMetadata;

// model "llama": <unk>, <s>, </s>, <0x00>..<0xFF>, the text's characters,
// then learned "▁"-style pieces (score falls with learning order).
// model "gpt2" (qwen2 pre-tokenizer): the 256 byte-level symbols, learned
// merges, then <|endoftext|> (BOS/EOS), <|im_start|>, <|im_end|> as control.
// Both are filled up to exactly n_vocab with "<unused_N>" tokens.
// Fails for another model or n_vocab below kMinSyntheticVocab.
Result<SyntheticVocab> make_synthetic_vocab(std::string_view model, int n_vocab);

}  // namespace clm
