#include "model/hf_tokenizer_json.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "model/hf_special_tokens.h"
#include "model/json_member.h"
#include "model/tokenizer.h"
#include "util/bounded_file.h"

namespace clm {

namespace {

using nlohmann::json;

// Bounds what a hostile file can make us allocate; real vocabularies have
// a few hundred thousand tokens.
constexpr int64_t kMaxTokens = 1 << 22;

// The split regexes of the supported families, exactly as tokenizer.json
// spells them, with whether that family looks a whole word up in the
// vocabulary before merging (BPE's ignore_merges; llama.cpp ties it to the
// pre-tokenizer name).
struct KnownSplit {
  std::string_view regex;
  std::string_view pre;
  bool ignore_merges;
};
constexpr KnownSplit kKnownSplits[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "llama-bpe", true},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen2", false},
};

const KnownSplit* find_split(std::string_view regex) {
  for (const auto& k : kKnownSplits) {
    if (k.regex == regex) return &k;
  }
  return nullptr;
}

std::string type_of(const json& step) {
  const json* t = json_member(step, "type");
  return t != nullptr && t->is_string() ? t->get<std::string>() : std::string("(no type)");
}

bool flag(const json& obj, const char* key, bool fallback) {
  const json* v = json_member(obj, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

// What a pre-tokenizer (possibly a Sequence) is made of.
struct PreSteps {
  std::vector<std::string> split_regexes;
  int byte_level = 0;
  bool byte_level_regex = false;  // ByteLevel splitting with GPT-2's built-in regex
  bool prefix_space = false;
  std::vector<std::string> unsupported;
};

void collect_pre_steps(const json& step, PreSteps& out) {
  const std::string type = type_of(step);
  if (type == "Sequence") {
    const json* steps = json_member(step, "pretokenizers");
    if (steps == nullptr || !steps->is_array()) {
      out.unsupported.push_back("Sequence without a pretokenizers array");
      return;
    }
    for (const json& s : *steps) collect_pre_steps(s, out);
  } else if (type == "Split") {
    const json* pattern = json_member(step, "pattern");
    const json* regex = pattern != nullptr ? json_member(*pattern, "Regex") : nullptr;
    const json* behavior = json_member(step, "behavior");
    if (regex == nullptr || !regex->is_string()) {
      out.unsupported.push_back("Split on a plain string");
    } else if (behavior == nullptr || !behavior->is_string() || behavior->get<std::string>() != "Isolated" ||
               flag(step, "invert", false)) {
      out.unsupported.push_back("Split that does not isolate its matches");
    } else {
      out.split_regexes.push_back(regex->get<std::string>());
    }
  } else if (type == "ByteLevel") {
    ++out.byte_level;
    out.byte_level_regex = out.byte_level_regex || flag(step, "use_regex", true);
    out.prefix_space = out.prefix_space || flag(step, "add_prefix_space", false);
  } else {
    out.unsupported.push_back(type);
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

// The tokenizer.ggml.pre name, from the pre-tokenizer, checked against the
// model's ignore_merges.
Result<std::string> detect_pre(const json& root, bool ignore_merges) {
  const json* pre = json_member(root, "pre_tokenizer");
  if (pre == nullptr) return fail("tokenizer.json: no pre_tokenizer; only byte-level BPE vocabularies are supported");
  PreSteps steps;
  collect_pre_steps(*pre, steps);
  if (!steps.unsupported.empty()) {
    return fail("tokenizer.json: unsupported pre-tokenizer step(s): " + join(steps.unsupported));
  }
  if (steps.byte_level != 1) {
    return fail("tokenizer.json: the pre-tokenizer must have exactly one ByteLevel step (it has " +
                std::to_string(steps.byte_level) + "); only byte-level BPE vocabularies are supported");
  }
  if (steps.prefix_space) return fail("tokenizer.json: ByteLevel add_prefix_space is not supported");
  if (steps.byte_level_regex || steps.split_regexes.size() != 1) {
    return fail(
        "tokenizer.json: unsupported pre-tokenizer: supported are one Split regex (Llama-3's or Qwen2's) "
        "followed by ByteLevel without its own regex");
  }
  const std::string& regex = steps.split_regexes.front();
  const KnownSplit* known = find_split(regex);
  if (known == nullptr) {
    return fail("tokenizer.json: unknown pre-tokenizer regex '" + regex +
                "'; supported: Llama-3's (llama-bpe) and Qwen2's (qwen2)");
  }
  if (known->ignore_merges != ignore_merges) {
    return fail("tokenizer.json: model.ignore_merges is " + std::string(ignore_merges ? "true" : "false") +
                " but the '" + std::string(known->pre) + "' pre-tokenizer implies " +
                (known->ignore_merges ? "true" : "false"));
  }
  return std::string(known->pre);
}

// Whether one normalizer step (possibly a Sequence of steps) asks for NFC.
// NFC is the only normalization implemented; any other step is refused by
// name rather than silently skipped, since it would change the ids.
Status collect_normalizer(const json& step, bool& nfc) {
  const std::string type = type_of(step);
  if (type == "NFC") {
    nfc = true;
    return {};
  }
  if (type == "Sequence") {
    const json* steps = json_member(step, "normalizers");
    if (steps == nullptr || !steps->is_array())
      return fail("tokenizer.json: a Sequence normalizer without a normalizers array");
    for (const json& s : *steps)
      if (auto r = collect_normalizer(s, nfc); !r) return r;
    return {};
  }
  return fail("tokenizer.json: unsupported normalizer '" + type + "' (supported: none, NFC, or a Sequence of NFC)");
}

// "NFC", or empty for none.
Result<std::string> read_normalizer(const json& root) {
  const json* n = json_member(root, "normalizer");
  if (n == nullptr) return std::string();
  bool nfc = false;
  if (auto s = collect_normalizer(*n, nfc); !s) return std::unexpected(s.error());
  return std::string(nfc ? "NFC" : "");
}

Status check_decoder(const json& root) {
  const json* decoder = json_member(root, "decoder");
  if (decoder == nullptr || type_of(*decoder) != "ByteLevel") {
    return fail("tokenizer.json: the decoder is " + (decoder ? "'" + type_of(*decoder) + "'" : std::string("missing")) +
                "; only byte-level BPE vocabularies (a ByteLevel decoder) are supported");
  }
  return {};
}

// model.type BPE, byte-level (no byte fallback, no word prefixes/suffixes).
Status check_model(const json& model) {
  const std::string type = type_of(model);
  if (type != "BPE") {
    return fail("tokenizer.json: model type '" + type + "' is not supported; only byte-level BPE is");
  }
  if (flag(model, "byte_fallback", false)) {
    return fail("tokenizer.json: a BPE model with byte_fallback (SentencePiece-style, e.g. Llama 2 or Mistral) "
                "is not supported; only byte-level BPE is");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = json_member(model, key);
    if (v != nullptr && !(v->is_string() && v->get<std::string>().empty())) {
      return fail(std::string("tokenizer.json: model.") + key + " is not supported");
    }
  }
  if (const json* d = json_member(model, "dropout"); d != nullptr && !(d->is_number() && d->get<double>() == 0.0)) {
    return fail("tokenizer.json: BPE dropout is not supported");
  }
  return {};
}

// Token texts by id: the vocabulary, then the added tokens over it.
struct TokenTable {
  std::vector<std::string> texts;
  std::vector<int32_t> types;
  std::vector<uint8_t> from;  // 0: hole, 1: vocabulary, 2: added token
};

Result<int32_t> token_id(const json& v, std::string_view what) {
  if (!v.is_number_integer()) return fail("tokenizer.json: " + std::string(what) + " has an id that is not an integer");
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id >= kMaxTokens) {
    return fail("tokenizer.json: " + std::string(what) + " has id " + std::to_string(id) + ", outside 0.." +
                std::to_string(kMaxTokens - 1));
  }
  return static_cast<int32_t>(id);
}

void grow(TokenTable& t, int32_t id) {
  const auto need = static_cast<std::size_t>(id) + 1;
  if (t.texts.size() < need) {
    t.texts.resize(need);
    t.types.resize(need, static_cast<int32_t>(TokenType::Unused));
    t.from.resize(need, 0);
  }
}

Status read_vocab(const json& model, TokenTable& t) {
  const json* vocab = json_member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) {
    return fail("tokenizer.json: model.vocab must be a non-empty object of token -> id");
  }
  for (const auto& [text, v] : vocab->items()) {
    auto id = token_id(v, "vocabulary token '" + text + "'");
    if (!id) return std::unexpected(id.error());
    grow(t, *id);
    const auto i = static_cast<std::size_t>(*id);
    if (t.from[i] != 0) {
      return fail("tokenizer.json: id " + std::to_string(*id) + " is given to both '" + t.texts[i] + "' and '" + text +
                  "'");
    }
    t.texts[i] = text;
    t.types[i] = static_cast<int32_t>(TokenType::Normal);
    t.from[i] = 1;
  }
  return {};
}

// llama.cpp's converter makes these added tokens control tokens even when
// tokenizer.json does not mark them special.
bool looks_special(std::string_view text) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return text.size() >= open.size() + close.size() && text.starts_with(open) && text.ends_with(close);
  };
  return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") ||  // <｜ ... ｜> (full-width bars)
         wrapped("<unused", ">");
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

Status read_added_tokens(const json& root, TokenTable& t) {
  const json* added = json_member(root, "added_tokens");
  if (added == nullptr) return {};
  if (!added->is_array()) return fail("tokenizer.json: added_tokens must be an array");
  for (const json& a : *added) {
    const json* content = json_member(a, "content");
    const json* id_value = json_member(a, "id");
    if (content == nullptr || !content->is_string() || content->get<std::string>().empty() || id_value == nullptr) {
      return fail("tokenizer.json: every added token needs an id and a non-empty content");
    }
    std::string text = content->get<std::string>();
    auto id = token_id(*id_value, "added token '" + text + "'");
    if (!id) return std::unexpected(id.error());
    grow(t, *id);
    const auto i = static_cast<std::size_t>(*id);
    if (t.from[i] == 2) {
      return fail("tokenizer.json: added tokens '" + t.texts[i] + "' and '" + text + "' share id " +
                  std::to_string(*id));
    }
    TokenType type = TokenType::Control;
    if (!flag(a, "special", false) && !looks_special(text)) {
      type = TokenType::UserDefined;
      replace_all(text, "\xE2\x96\x81", " ");  // "▁": user-defined tokens are stored pre-normalized
    }
    t.texts[i] = std::move(text);
    t.types[i] = static_cast<int32_t>(type);
    t.from[i] = 2;
  }
  return {};
}

// Both encodings: "left right" lines, and [left, right] pairs (newer files;
// a space inside a part is written as U+0120, the byte-level space).
Result<std::vector<std::string>> read_merges(const json& model) {
  const json* merges = json_member(model, "merges");
  if (merges == nullptr || !merges->is_array() || merges->empty()) {
    return fail("tokenizer.json: model.merges must be a non-empty array");
  }
  std::vector<std::string> out;
  out.reserve(merges->size());
  for (std::size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    auto bad = [&] {
      return fail("tokenizer.json: merge " + std::to_string(i) + " (" + m.dump() +
                  ") is neither \"left right\" nor [\"left\", \"right\"]");
    };
    if (m.is_string()) {
      const std::string line = m.get<std::string>();
      const std::size_t space = line.find(' ');
      if (space == 0 || space == std::string::npos || space + 1 >= line.size() ||
          line.find(' ', space + 1) != std::string::npos) {
        return bad();
      }
      out.push_back(line);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      std::string left = m[0].get<std::string>();
      std::string right = m[1].get<std::string>();
      if (left.empty() || right.empty()) return bad();
      replace_all(left, " ", "\xC4\xA0");
      replace_all(right, " ", "\xC4\xA0");
      out.push_back(left + " " + right);
    } else {
      return bad();
    }
  }
  return out;
}

Result<json> parse_json(std::string_view text, std::string_view file) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) return fail(std::string(file) + ": the top level is not a JSON object");
    return j;
  } catch (const json::exception& e) {
    return fail(std::string(file) + " is not valid JSON: " + e.what());
  }
}

// The largest tokenizer.json files in use are some tens of MiB.
constexpr std::size_t kMaxTokenizerFileBytes = 256 * kMiB;

Result<std::string> read_file(const std::string& path) {
  return read_bounded_file(path, kMaxTokenizerFileBytes, "tokenizer file");
}

Result<VocabMetadata> convert(const json& root, const json* config) {
  const json* model = json_member(root, "model");
  if (model == nullptr || !model->is_object()) return fail("tokenizer.json: no model object");
  if (auto s = check_model(*model); !s) return std::unexpected(s.error());
  if (auto s = check_decoder(root); !s) return std::unexpected(s.error());
  auto normalizer = read_normalizer(root);
  if (!normalizer) return std::unexpected(normalizer.error());
  VocabMetadata v;
  v.model = "gpt2";
  v.normalizer = std::move(*normalizer);
  auto pre = detect_pre(root, flag(*model, "ignore_merges", false));
  if (!pre) return std::unexpected(pre.error());
  v.pre = std::move(*pre);

  TokenTable table;
  if (auto s = read_vocab(*model, table); !s) return std::unexpected(s.error());
  if (auto s = read_added_tokens(root, table); !s) return std::unexpected(s.error());
  for (std::size_t i = 0; i < table.texts.size(); ++i) {
    if (table.from[i] == 0) table.texts[i] = "[PAD" + std::to_string(i) + "]";
  }
  v.tokens = std::move(table.texts);
  v.types = std::move(table.types);
  auto merges = read_merges(*model);
  if (!merges) return std::unexpected(merges.error());
  v.merges = std::move(*merges);

  if (auto s = apply_hf_special_tokens(root, config, v); !s) return std::unexpected(s.error());
  return v;
}

}  // namespace

std::optional<std::string_view> pre_name_of_split_regex(std::string_view regex) {
  const KnownSplit* k = find_split(regex);
  if (k == nullptr) return std::nullopt;
  return k->pre;
}

Result<VocabMetadata> parse_hf_tokenizer(std::string_view tokenizer_json,
                                         std::optional<std::string_view> tokenizer_config_json) {
  auto root = parse_json(tokenizer_json, "tokenizer.json");
  if (!root) return std::unexpected(root.error());
  std::optional<json> config;
  if (tokenizer_config_json) {
    auto c = parse_json(*tokenizer_config_json, "tokenizer_config.json");
    if (!c) return std::unexpected(c.error());
    config = std::move(*c);
  }
  return convert(*root, config ? &*config : nullptr);
}

Result<VocabMetadata> load_hf_tokenizer(const std::string& tokenizer_json_path, const std::string& config_path) {
  auto text = read_file(tokenizer_json_path);
  if (!text) return std::unexpected(text.error());
  std::optional<std::string> config;
  if (!config_path.empty()) {
    auto c = read_file(config_path);
    if (!c) return std::unexpected(c.error());
    config = std::move(*c);
  }
  auto v = parse_hf_tokenizer(*text, config ? std::optional<std::string_view>(*config) : std::nullopt);
  if (!v) {
    return fail(v.error().message + " (reading " + tokenizer_json_path +
                (config_path.empty() ? std::string() : " and " + config_path) + ")");
  }
  return v;
}

}  // namespace clm
