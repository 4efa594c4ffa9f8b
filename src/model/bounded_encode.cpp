// Tokenizer::encode_bounded: the fragments split_special cut, encoded in
// order until the token bound is passed. Cutting special tokens out scans the
// whole text (a find per special token, at memchr speed); the costly part,
// merging, stops with the chunk that passes the bound.
#include "model/tokenizer.h"

namespace clm {

BoundedTokens Tokenizer::encode_bounded(std::string_view text, bool add_special, bool parse_special,
                                        std::size_t max_tokens) const {
  return encode_fragments_bounded(text, split_special(text, parse_special), add_special, max_tokens);
}

BoundedTokens Tokenizer::encode_bounded(const PromptText& prompt, bool add_special, std::size_t max_tokens) const {
  return encode_fragments_bounded(prompt.text, split_special(prompt.text, true, prompt.literal), add_special,
                                  max_tokens);
}

BoundedTokens Tokenizer::encode_fragments_bounded(std::string_view text, const std::vector<Fragment>& fragments,
                                                  bool add_special, std::size_t max_tokens) const {
  BoundedTokens r;
  if (add_special && add_bos_ && bos_ >= 0) r.tokens.push_back(bos_);
  bool starts_sentence = true;
  // The fragments cover text in order, a special token's by its own text.
  for (const Fragment& f : fragments) {
    if (r.tokens.size() > max_tokens) break;
    if (f.token >= 0) {
      r.tokens.push_back(f.token);
      r.bytes_read += f.text.size();
      starts_sentence = true;
      continue;
    }
    r.bytes_read += encode_text_bounded(f.text, starts_sentence, max_tokens, r.tokens);
    starts_sentence = false;
  }
  if (r.tokens.size() <= max_tokens) {
    if (add_special && add_eos_ && eos_ >= 0) r.tokens.push_back(eos_);
    r.bytes_read = text.size();
  }
  r.exceeded = r.tokens.size() > max_tokens;
  return r;
}

}  // namespace clm
