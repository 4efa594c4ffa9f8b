#include "model/tokenizer.h"

#include <algorithm>
#include <array>

#include "model/bpe_tokenizer.h"
#include "model/spm_tokenizer.h"
#include "model/utf8.h"

namespace clm {

namespace {

constexpr uint64_t kNoToken = 0xFFFFFFFFu;

// An optional token id key: absent, "none" (-1 as u32) or out of range
// all mean no such token.
int32_t read_token_id(const GgufFile& file, std::string_view key, int32_t fallback, int n_vocab) {
  if (file.find(key) == nullptr) return fallback;
  auto v = file.get_uint(key);
  if (!v || *v == kNoToken || *v >= static_cast<uint64_t>(n_vocab)) return -1;
  return static_cast<int32_t>(*v);
}

bool read_flag(const GgufFile& file, std::string_view key, bool fallback) {
  if (file.find(key) == nullptr) return fallback;
  auto v = file.get_bool(key);
  return v ? *v : fallback;
}

// Texts of control tokens that end a turn in common chat formats.
constexpr std::array<std::string_view, 7> kEndOfTurnTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<|end_of_text|>",
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& file) {
  auto model = file.get_string("tokenizer.ggml.model");
  if (!model) return fail("tokenizer: no tokenizer.ggml.model in the file");
  if (*model == "llama") {
    auto t = SpmTokenizer::load(file);
    if (!t) return std::unexpected(t.error());
    return std::unique_ptr<Tokenizer>(std::move(*t));
  }
  if (*model == "gpt2") {
    auto t = BpeTokenizer::load(file);
    if (!t) return std::unexpected(t.error());
    return std::unique_ptr<Tokenizer>(std::move(*t));
  }
  return fail("tokenizer: unsupported tokenizer model '" + std::string(*model) +
              "' (tokenizer.ggml.model); supported: llama (SentencePiece), gpt2 (byte-level BPE)");
}

Status Tokenizer::load_common(const GgufFile& file, bool spm) {
  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return fail("tokenizer: " + tokens.error().message);
  if (tokens->empty()) return fail("tokenizer: tokenizer.ggml.tokens is empty");
  if (tokens->size() > static_cast<std::size_t>(INT32_MAX)) return fail("tokenizer: too many tokens");
  texts_.assign(tokens->begin(), tokens->end());
  const int n = n_vocab();

  types_.assign(texts_.size(), TokenType::Normal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    auto types = file.get_int_array("tokenizer.ggml.token_type");
    if (!types) return fail("tokenizer: " + types.error().message);
    if (types->size() != texts_.size()) {
      return fail("tokenizer: tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                  " entries for " + std::to_string(n) + " tokens");
    }
    for (std::size_t i = 0; i < types->size(); ++i) {
      const int64_t t = (*types)[i];
      types_[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined;
    }
  }

  ids_.reserve(texts_.size());
  for (int32_t id = 0; id < n; ++id) ids_.emplace(texts_[static_cast<std::size_t>(id)], id);

  bos_ = read_token_id(file, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n);
  eos_ = read_token_id(file, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n);
  add_bos_ = read_flag(file, "tokenizer.ggml.add_bos_token", spm);
  add_eos_ = read_flag(file, "tokenizer.ggml.add_eos_token", false);

  for (std::string_view key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const int32_t id = read_token_id(file, key, -1, n);
    if (id >= 0) end_ids_.push_back(id);
  }
  if (eos_ >= 0) end_ids_.push_back(eos_);
  for (std::string_view text : kEndOfTurnTexts) {
    auto id = find_token(text);
    if (id && types_[static_cast<std::size_t>(*id)] == TokenType::Control) end_ids_.push_back(*id);
  }

  for (int32_t id = 0; id < n; ++id) {
    const TokenType t = types_[static_cast<std::size_t>(id)];
    if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) &&
        !texts_[static_cast<std::size_t>(id)].empty()) {
      special_ids_.push_back(id);
    }
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [this](int32_t a, int32_t b) {
    return texts_[static_cast<std::size_t>(a)].size() > texts_[static_cast<std::size_t>(b)].size();
  });
  return {};
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return id >= 0 && std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_fragments(split_special(text, parse_special), add_special);
}

std::vector<int32_t> Tokenizer::encode(const PromptText& prompt, bool add_special) const {
  return encode_fragments(split_special(prompt.text, true, prompt.literal), add_special);
}

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text, bool parse_special,
                                                          const std::vector<TextRange>& literal) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  const PromptText ranges{std::string(), literal};
  frags.push_back({text, -1});
  for (int32_t id : special_ids_) {
    const TokenType type = types_[static_cast<std::size_t>(id)];
    // Control and unknown tokens are only recognised on request; user-defined
    // ones are part of the vocabulary's text and always win.
    const bool user_defined = type == TokenType::UserDefined;
    if (!parse_special && !user_defined) continue;
    const std::string_view special = texts_[static_cast<std::size_t>(id)];
    std::vector<Fragment> next;
    next.reserve(frags.size());
    for (const Fragment& f : frags) {
      if (f.token >= 0 || f.text.size() < special.size()) {
        next.push_back(f);
        continue;
      }
      const std::size_t base = static_cast<std::size_t>(f.text.data() - text.data());
      std::size_t start = 0;  // of the raw text not yet emitted
      for (std::size_t pos = f.text.find(special); pos != std::string_view::npos;
           pos = f.text.find(special, pos + 1)) {
        if (pos < start) continue;  // overlaps the previous match
        if (!user_defined && ranges.overlaps_literal(base + pos, base + pos + special.size())) continue;
        if (pos > start) next.push_back({f.text.substr(start, pos - start), -1});
        next.push_back({special, id});
        start = pos + special.size();
      }
      if (start < f.text.size()) next.push_back({f.text.substr(start), -1});
    }
    frags = std::move(next);
  }
  return frags;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  const bool strip = strip_space_after_bos_ && !ids.empty() && ids[0] == bos_;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_to_piece(ids[i]);
    if (strip && i == 1 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    out += piece;
  }
  return out;
}

std::string StreamDecoder::push(int32_t token) {
  std::string piece = tokenizer_.token_to_piece(token);
  if (pushed_ == 0) started_with_bos_ = token == tokenizer_.bos_id();
  if (pushed_ == 1 && started_with_bos_ && tokenizer_.strips_space_after_bos() && !piece.empty() &&
      piece[0] == ' ') {
    piece.erase(0, 1);
  }
  ++pushed_;
  pending_ += piece;
  std::size_t held = 0;
  std::string out = utf8_sanitize(pending_, false, &held);
  pending_.erase(0, pending_.size() - held);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_sanitize(pending_, true, nullptr);
  pending_.clear();
  return out;
}

}  // namespace clm
