#include "model/bpe_tokenizer.h"

#include <algorithm>

#include "model/pair_merge.h"
#include "model/unicode_nfc.h"
#include "model/utf8.h"
#include "model/vocab_metadata.h"

namespace clm {

namespace {

struct ByteTables {
  std::array<uint32_t, 256> to_cp{};
  std::unordered_map<uint32_t, uint8_t> from_cp;
};

const ByteTables& byte_tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t.to_cp[b] = printable ? b : next++;
      t.from_cp.emplace(t.to_cp[b], static_cast<uint8_t>(b));
    }
    return t;
  }();
  return tables;
}

// llama.cpp's defaults for the Llama-3 pre-tokenizer names: whole-word
// lookup before merging, and BOS added unless the file says otherwise.
bool is_llama3_family(std::string_view pre) { return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe"; }

// Bytes of text pre-tokenized at a time by encode_text_bounded.
constexpr std::size_t kChunkBytes = 4096;
// Words ending closer than this to a chunk's cut wait for the next chunk: the
// split patterns look at most a few characters past a word (contractions,
// "(?!\S)", a newline after punctuation), and a word that runs to the cut
// may go on past it.
constexpr std::size_t kCutMargin = 32;

}  // namespace

uint32_t byte_to_unicode(uint8_t byte) { return byte_tables().to_cp[byte]; }

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::load(const GgufFile& file) {
  std::string pre_name;
  if (file.find("tokenizer.ggml.pre") != nullptr) {
    auto pre = file.get_string("tokenizer.ggml.pre");
    if (!pre) return fail("tokenizer: " + pre.error().message);
    pre_name = std::string(*pre);
  }
  auto kind = pre_tokenizer_from_name(pre_name);
  if (!kind) {
    return fail("tokenizer: unsupported pre-tokenizer '" + pre_name +
                "' (tokenizer.ggml.pre) for a gpt2 tokenizer model");
  }
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  t->pre_ = *kind;
  if (file.find(kNormalizerKey) != nullptr) {
    auto normalizer = file.get_string(kNormalizerKey);
    if (!normalizer) return fail("tokenizer: " + normalizer.error().message);
    if (*normalizer != "NFC")
      return fail("tokenizer: unsupported normalizer '" + std::string(*normalizer) + "' (" + kNormalizerKey +
                  "); supported: NFC");
    t->nfc_ = true;
  }
  if (auto s = t->load_common(file, false); !s) return std::unexpected(s.error());
  if (is_llama3_family(pre_name)) {
    t->ignore_merges_ = true;
    if (file.find("tokenizer.ggml.add_bos_token") == nullptr) t->add_bos_ = true;
  }
  auto merges = file.get_string_array("tokenizer.ggml.merges");
  if (!merges) return fail("tokenizer: a gpt2 tokenizer needs tokenizer.ggml.merges: " + merges.error().message);
  t->ranks_.reserve(merges->size());
  for (std::size_t i = 0; i < merges->size(); ++i) {
    const std::string_view m = (*merges)[i];
    const std::size_t space = m.find(' ', 1);
    if (space == std::string_view::npos || space + 1 >= m.size()) {
      return fail("tokenizer: merge " + std::to_string(i) + " '" + std::string(m) + "' is not 'left right'");
    }
    t->ranks_.emplace(std::string(m), static_cast<int32_t>(i));
  }
  return t;
}

std::vector<int32_t> BpeTokenizer::encode_fragments(const std::vector<Fragment>& fragments, bool add_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    std::string storage;
    for (std::string_view word : pre_tokenize(pre_, normalized(f.text, storage))) encode_word(word, out);
  }
  if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::string_view BpeTokenizer::normalized(std::string_view text, std::string& storage) const {
  if (!nfc_) return text;
  storage = to_nfc(text);
  return storage;
}

// Words never merge with each other, so the text is pre-tokenized a chunk at
// a time, and only the words that end well before the chunk's cut (where
// the split patterns cannot have seen it) are encoded; the next chunk starts
// at the first word left. A word longer than a chunk doubles the chunk.
// A normalizing vocabulary normalizes the whole fragment first (a linear
// pass, cheap beside merging); the bytes read then count the normalized text.
std::size_t BpeTokenizer::encode_text_bounded(std::string_view original, bool /*starts_sentence*/,
                                              std::size_t max_tokens, std::vector<int32_t>& out) const {
  std::string storage;
  const std::string_view text = normalized(original, storage);
  std::size_t pos = 0;
  std::size_t chunk = kChunkBytes;
  while (pos < text.size()) {
    std::size_t end = std::min(text.size(), pos + chunk);
    while (end < text.size() && end > pos + 1 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) --end;
    const bool last = end == text.size();
    std::size_t done = pos;
    for (std::string_view word : pre_tokenize(pre_, text.substr(pos, end - pos))) {
      const std::size_t word_end = static_cast<std::size_t>(word.data() - text.data()) + word.size();
      if (!last && word_end + kCutMargin > end) break;
      encode_word(word, out);
      done = word_end;
      if (out.size() > max_tokens) return done;
    }
    if (last) return original.size();
    if (done == pos) {
      chunk *= 2;
      continue;
    }
    pos = done;
    chunk = kChunkBytes;
  }
  return original.size();
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const std::string text = to_byte_level(word);
  if (ignore_merges_) {
    if (auto id = find_token(text)) {
      out.push_back(*id);
      return;
    }
  }
  // GPT-2 merges: the pair with the lowest rank in tokenizer.ggml.merges first.
  std::string key;
  const auto pieces = merge_pairs(text, [&](std::string_view left, std::string_view right) -> std::optional<double> {
    key.assign(left);
    key.push_back(' ');
    key.append(right);
    const auto it = ranks_.find(key);
    if (it == ranks_.end()) return std::nullopt;
    return -static_cast<double>(it->second);
  });
  for (const PieceSpan& s : pieces) {
    const std::string_view piece = std::string_view(text).substr(s.start, s.len);
    if (auto id = find_token(piece)) {
      out.push_back(*id);
      continue;
    }
    // A merge result the vocabulary lacks: fall back to its characters.
    for (std::size_t pos = 0; pos < piece.size();) {
      const std::size_t len = utf8_decode_at(piece, pos).len;
      if (auto id = find_token(piece.substr(pos, len))) out.push_back(*id);
      pos += len;
    }
  }
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!valid_id(id)) return {};
  const std::string& text = texts_[static_cast<std::size_t>(id)];
  switch (types_[static_cast<std::size_t>(id)]) {
    case TokenType::Normal:
    case TokenType::Undefined:
    case TokenType::Byte: {
      const auto& from = byte_tables().from_cp;
      std::string out;
      out.reserve(text.size());
      for (std::size_t pos = 0; pos < text.size();) {
        const Utf8Char c = utf8_decode_at(text, pos);
        auto it = from.find(c.cp);
        if (it != from.end()) out.push_back(static_cast<char>(it->second));
        else out.append(text, pos, c.len);  // not a byte stand-in: keep as written
        pos += c.len;
      }
      return out;
    }
    case TokenType::UserDefined: return text;
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::Unused: return render_special ? text : std::string();
  }
  return {};
}

}  // namespace clm
