#include "model/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "model/pair_merge.h"
#include "model/utf8.h"

namespace clm {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

// "<0x4A>" -> 0x4A; -1 when the text is not a byte token's.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int v = 0;
  for (char c : text.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') out += kSpaceMark;
    else out.push_back(c);
  }
  return out;
}

// Bytes of text merged at a time by encode_text_bounded, before the cut.
constexpr std::size_t kChunkBytes = 4096;

// Whether `piece` has "▁" right after an ASCII byte (a space never stays a
// byte here: it is escaped to "▁").
bool has_mark_after_ascii(std::string_view piece) {
  for (std::size_t pos = piece.find(kSpaceMark, 1); pos != std::string_view::npos;
       pos = piece.find(kSpaceMark, pos + 1)) {
    if (static_cast<uint8_t>(piece[pos - 1]) < 0x80) return true;
  }
  return false;
}

// The first position at or after `from` where raw text may be cut: a space
// right after an ASCII character that is not a space; text.size() if none.
std::size_t next_cut(std::string_view text, std::size_t from) {
  for (std::size_t i = std::max<std::size_t>(from, 1); i < text.size(); ++i) {
    const auto prev = static_cast<uint8_t>(text[i - 1]);
    if (text[i] == ' ' && prev < 0x80 && prev != ' ') return i;
  }
  return text.size();
}

}  // namespace

Result<std::unique_ptr<SpmTokenizer>> SpmTokenizer::load(const GgufFile& file) {
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
  if (auto s = t->load_common(file, true); !s) return std::unexpected(s.error());
  t->scores_.assign(t->texts_.size(), 0.0f);
  if (file.find("tokenizer.ggml.scores") != nullptr) {
    auto scores = file.get_float_array("tokenizer.ggml.scores");
    if (!scores) return fail("tokenizer: " + scores.error().message);
    if (scores->size() != t->texts_.size()) {
      return fail("tokenizer: tokenizer.ggml.scores has " + std::to_string(scores->size()) + " entries for " +
                  std::to_string(t->n_vocab()) + " tokens");
    }
    t->scores_ = std::move(*scores);
  }
  if (file.find("tokenizer.ggml.add_space_prefix") != nullptr) {
    auto v = file.get_bool("tokenizer.ggml.add_space_prefix");
    if (v) t->add_space_prefix_ = *v;
  }
  t->strip_space_after_bos_ = t->add_space_prefix_;
  t->unk_ = -1;
  if (file.find("tokenizer.ggml.unknown_token_id") != nullptr) {
    auto v = file.get_uint("tokenizer.ggml.unknown_token_id");
    if (v && *v < static_cast<uint64_t>(t->n_vocab())) t->unk_ = static_cast<int32_t>(*v);
  } else {
    t->unk_ = 0;
  }
  t->byte_ids_.fill(-1);
  for (int32_t id = 0; id < t->n_vocab(); ++id) {
    if (t->types_[static_cast<std::size_t>(id)] != TokenType::Byte) continue;
    const int b = parse_byte_token(t->texts_[static_cast<std::size_t>(id)]);
    if (b >= 0 && t->byte_ids_[static_cast<std::size_t>(b)] < 0) t->byte_ids_[static_cast<std::size_t>(b)] = id;
  }
  t->cuts_before_spaces_ = true;
  for (int32_t id = 0; id < t->n_vocab(); ++id) {
    const std::string& text = t->texts_[static_cast<std::size_t>(id)];
    if (t->piece_id(text) && has_mark_after_ascii(text)) t->cuts_before_spaces_ = false;
  }
  return t;
}

std::optional<int32_t> SpmTokenizer::piece_id(std::string_view text) const {
  auto id = find_token(text);
  if (!id) return std::nullopt;
  switch (types_[static_cast<std::size_t>(*id)]) {
    case TokenType::Normal:
    case TokenType::UserDefined:
    case TokenType::Undefined: return id;
    default: return std::nullopt;  // control, byte and unused tokens never come from text
  }
}

std::vector<int32_t> SpmTokenizer::encode_fragments(const std::vector<Fragment>& fragments, bool add_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  // The text after a special token starts a new "sentence" and gets its own
  // space prefix, as SentencePiece would see it.
  bool after_special = true;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    std::string raw;
    if (add_space_prefix_ && after_special) raw.push_back(' ');
    raw.append(f.text);
    encode_escaped(escape_spaces(raw), out);
    after_special = false;
  }
  if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
  return out;
}

// A merge joins two adjacent pieces into one the vocabulary has. Cut before
// a space that follows an ASCII character, a piece across the cut would hold
// that character followed by "▁", which no piece does (cuts_before_spaces_):
// so no merge ever crosses the cut and each side merges as it would in the
// whole text. The space prefix goes to the first chunk only, as to the whole.
std::size_t SpmTokenizer::encode_text_bounded(std::string_view text, bool starts_sentence, std::size_t max_tokens,
                                              std::vector<int32_t>& out) const {
  std::size_t pos = 0;
  do {
    const std::size_t end = cuts_before_spaces_ ? next_cut(text, pos + kChunkBytes) : text.size();
    std::string raw;
    if (pos == 0 && add_space_prefix_ && starts_sentence) raw.push_back(' ');
    raw.append(text.substr(pos, end - pos));
    encode_escaped(escape_spaces(raw), out);
    pos = end;
  } while (pos < text.size() && out.size() <= max_tokens);
  return pos;
}

void SpmTokenizer::encode_escaped(std::string_view text, std::vector<int32_t>& out) const {
  // SentencePiece merges: the pair whose joined piece has the highest score first.
  const auto pieces = merge_pairs(text, [&](std::string_view left, std::string_view right) -> std::optional<double> {
    const auto id = piece_id(std::string_view(left.data(), left.size() + right.size()));
    if (!id) return std::nullopt;
    return static_cast<double>(scores_[static_cast<std::size_t>(*id)]);
  });
  for (const PieceSpan& s : pieces) {
    const std::string_view piece = text.substr(s.start, s.len);
    if (auto id = piece_id(piece)) {
      out.push_back(*id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = byte_ids_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out.push_back(byte_id);
      else if (unk_ >= 0) out.push_back(unk_);
    }
  }
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!valid_id(id)) return {};
  const std::string& text = texts_[static_cast<std::size_t>(id)];
  switch (types_[static_cast<std::size_t>(id)]) {
    case TokenType::Normal:
    case TokenType::Undefined: {
      std::string out;
      out.reserve(text.size());
      for (std::size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
          out.push_back(' ');
          pos += kSpaceMark.size();
        } else {
          out.push_back(text[pos++]);
        }
      }
      return out;
    }
    case TokenType::Byte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : std::string();
    }
    case TokenType::UserDefined: return text;
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::Unused: return render_special ? text : std::string();
  }
  return {};
}

}  // namespace clm
