// GPT-2 style byte-level BPE (tokenizer.ggml.model "gpt2"): text is split
// into words by the named pre-tokenizer, each byte is written as a printable
// stand-in character, and pairs merge by their rank in tokenizer.ggml.merges.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <unordered_map>

#include "model/pre_tokenizer.h"
#include "model/tokenizer.h"

namespace clm {

// The GPT-2 byte-to-character table: printable Latin-1 bytes stand for
// themselves, the others for U+0100 onwards, in byte order.
uint32_t byte_to_unicode(uint8_t byte);
// A string's bytes written with that table (UTF-8 of the stand-ins).
std::string to_byte_level(std::string_view bytes);

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<BpeTokenizer>> load(const GgufFile& file);

  std::string token_to_piece(int32_t id, bool render_special = false) const override;

 private:
  std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_special) const override;
  std::size_t encode_text_bounded(std::string_view text, bool starts_sentence, std::size_t max_tokens,
                                  std::vector<int32_t>& out) const override;
  BpeTokenizer() = default;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // The text a fragment is split from: `text` itself, or its normalized
  // form kept in `storage`.
  std::string_view normalized(std::string_view text, std::string& storage) const;

  PreTokenizerKind pre_ = PreTokenizerKind::Gpt2;
  // A word that is a token as a whole becomes that token, merges or not
  // (tokenizer.json's ignore_merges; llama.cpp sets it for the Llama-3 names).
  bool ignore_merges_ = false;
  // Text between special tokens is put in NFC before it is split, as the
  // vocabulary's tokenizer.json asks (kNormalizerKey).
  bool nfc_ = false;
  // "left right" (the merge line itself) -> rank; lower merges first.
  std::unordered_map<std::string, int32_t> ranks_;
};

}  // namespace clm
