// SentencePiece-style BPE (tokenizer.ggml.model "llama"): spaces become "▁",
// a "▁" is prefixed to the text, adjacent pieces merge best score first, and
// characters the vocabulary lacks fall back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <memory>

#include "model/tokenizer.h"

namespace clm {

class SpmTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<SpmTokenizer>> load(const GgufFile& file);

  std::string token_to_piece(int32_t id, bool render_special = false) const override;

 private:
  std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_special) const override;
  std::size_t encode_text_bounded(std::string_view text, bool starts_sentence, std::size_t max_tokens,
                                  std::vector<int32_t>& out) const override;
  SpmTokenizer() = default;
  // Appends the tokens of one piece of raw text (already "▁"-escaped).
  void encode_escaped(std::string_view text, std::vector<int32_t>& out) const;
  // A piece that merging may produce or the result may use directly.
  std::optional<int32_t> piece_id(std::string_view text) const;

  std::vector<float> scores_;
  std::array<int32_t, 256> byte_ids_{};
  int32_t unk_ = -1;
  bool add_space_prefix_ = true;
  // No piece that merging may produce has "▁" right after an ASCII byte, so
  // text cut before a space that follows an ASCII character merges the same
  // in pieces as whole (see encode_text_bounded). Real SentencePiece
  // vocabularies are like this; a vocabulary that is not is never cut.
  bool cuts_before_spaces_ = false;
};

}  // namespace clm
