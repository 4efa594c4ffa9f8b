// Pre-tokenizers of byte-level BPE vocabularies: each splits text into words
// exactly as a sequence of the family's splitting regexes would (matches and
// the text between them both become words), without a regex engine.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace clm {

enum class PreTokenizerKind {
  Gpt2,           // 's|'t|... | ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,         // case-insensitive contractions, \p{N}{1,3}, newline-aware
  Qwen2,          // as Llama3 but digits one at a time
  DeepseekLlm,
  DeepseekCoder,
  Falcon,
  Starcoder,      // single digits, then the GPT-2 pattern (also refact)
};

// The pre-tokenizer a tokenizer.ggml.pre value names; nullopt if unknown.
// An empty name (key absent) and "default" mean GPT-2.
std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view pre);

// Words of `text`, in order, as views into it; their concatenation is text.
std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace clm
