// Tokenizers built from GGUF metadata: SentencePiece-style (`llama`, scores
// and byte fallback) and GPT-2 byte-level BPE (`gpt2`, with the pre-tokenizer
// named by tokenizer.ggml.pre). Special tokens and BOS/EOS as the metadata says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/gguf.h"
#include "model/prompt_text.h"
#include "util/error.h"

namespace clm {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

// What an encode bounded by a token count produced (Tokenizer::encode_bounded).
struct BoundedTokens {
  std::vector<int32_t> tokens;  // every token when !exceeded, else those of the text read
  bool exceeded = false;        // the text has more than the bound's tokens
  std::size_t bytes_read = 0;   // bytes of text tokenized: all of it unless exceeded (of NFC text, if normalized)
};

class Tokenizer {
 public:
  // Refuses, by name, tokenizer models or pre-tokenizers it does not support.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& file);
  virtual ~Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;  // the id index points into texts_
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: prepend BOS / append EOS as the metadata asks.
  // parse_special: text matching a control token becomes it. User-defined
  // tokens are always matched, as the reference implementations do.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // As encode with parse_special on, except inside prompt.literal: a control
  // token's text that overlaps a literal range stays text. Without literal
  // ranges this is exactly encode(prompt.text, add_special, true).
  std::vector<int32_t> encode(const PromptText& prompt, bool add_special) const;
  // As encode, but stops as soon as more than max_tokens tokens come out, so
  // an overlong text costs about what its first max_tokens tokens cost, not
  // its whole length. Within the bound the tokens are exactly encode's.
  BoundedTokens encode_bounded(std::string_view text, bool add_special, bool parse_special,
                               std::size_t max_tokens) const;
  BoundedTokens encode_bounded(const PromptText& prompt, bool add_special, std::size_t max_tokens) const;
  // The bytes a token stands for (byte tokens -> that byte, SPM "▁" -> space).
  // Control tokens render as empty unless render_special.
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  int n_vocab() const { return static_cast<int>(texts_.size()); }
  int32_t bos_id() const { return bos_; }
  int32_t eos_id() const { return eos_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // End of generation: EOS, EOT, EOM, or a control token whose text is a
  // well-known end-of-turn marker.
  bool is_end_of_generation(int32_t id) const;
  std::string_view token_text(int32_t id) const { return texts_.at(static_cast<std::size_t>(id)); }
  TokenType token_type(int32_t id) const { return types_.at(static_cast<std::size_t>(id)); }
  // The id whose text is exactly `text`, if any.
  std::optional<int32_t> find_token(std::string_view text) const;
  // Whole-sequence decode. When the sequence starts with BOS and the family
  // adds a space prefix while encoding (SPM), the first piece after BOS loses
  // that leading space, so decode(encode(text, true, false)) == text.
  std::string decode(std::span<const int32_t> ids) const;
  bool strips_space_after_bos() const { return strip_space_after_bos_; }

 protected:
  Tokenizer() = default;

  // Reads the metadata every family shares; `spm` selects family defaults.
  Status load_common(const GgufFile& file, bool spm);

  // A piece of input: either raw text or a special token already resolved.
  struct Fragment {
    std::string_view text;
    int32_t token = -1;
  };
  // Cuts special-token texts out of `text`, longest token first. Control
  // and unknown tokens only where parse_special is on and the match does not
  // overlap a range of `literal` (byte offsets into text).
  std::vector<Fragment> split_special(std::string_view text, bool parse_special,
                                      const std::vector<TextRange>& literal = {}) const;
  // The family's encoding of fragments that split_special cut.
  virtual std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_special) const = 0;
  // Appends the tokens of one raw-text fragment (starts_sentence: first, or
  // after a special token) a chunk at a time, cut only where the family's
  // tokens cannot cross, and stops after the chunk that takes out.size()
  // past max_tokens. Returns the bytes of text tokenized.
  virtual std::size_t encode_text_bounded(std::string_view text, bool starts_sentence, std::size_t max_tokens,
                                          std::vector<int32_t>& out) const = 0;
  BoundedTokens encode_fragments_bounded(std::string_view text, const std::vector<Fragment>& fragments,
                                         bool add_special, std::size_t max_tokens) const;
  bool valid_id(int32_t id) const { return id >= 0 && id < n_vocab(); }

  std::vector<std::string> texts_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string_view, int32_t> ids_;
  std::vector<int32_t> special_ids_;  // control, user-defined, unknown; longest text first
  std::vector<int32_t> end_ids_;
  int32_t bos_ = -1;
  int32_t eos_ = -1;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool strip_space_after_bos_ = false;
};

// Turns a stream of tokens into text, holding back bytes until they form
// complete UTF-8 characters, so nothing printed is ever broken UTF-8.
// The concatenated output of push() and flush() equals decode() of the same
// ids whenever that decode is valid UTF-8.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t token);
  std::string flush();  // whatever is left; invalid bytes become U+FFFD

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
  std::size_t pushed_ = 0;
  bool started_with_bos_ = false;
};

}  // namespace clm
