// Reading Hugging Face tokenizer.json / tokenizer_config.json into GGUF
// vocabulary metadata, on small crafted files: the token table, both merge
// encodings, the pre-tokenizer named after its regex, the special tokens as
// llama.cpp's converter reads them, and a clear refusal of everything else.
// The real Llama-3 and Qwen3 files are checked in tests/model/reference.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/hf_tokenizer_json.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json pre_tokenizer(const std::string& regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

// A merge in the newer encoding. (A braced pair would make nlohmann build
// an object.)
json pair(const char* left, const char* right) { return json::array({left, right}); }

// A Qwen2-style file: ids 0..6 in the vocabulary, 7 left out (a hole),
// added tokens at 8..11.
json qwen_like() {
  return {
      {"version", "1.0"},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer", pre_tokenizer(kQwen2Regex)},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"added_tokens",
       {{{"id", 8}, {"content", "<|endoftext|>"}, {"special", true}},
        {{"id", 9}, {"content", "<|im_end|>"}, {"special", true}},
        {{"id", 10}, {"content", "<think>"}, {"special", false}},
        {{"id", 11}, {"content", "<|fim_pad|>"}, {"special", false}},
        {{"id", 12}, {"content", "\xE2\x96\x81user"}, {"special", false}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}, {"\xC4\xA0", 5}, {"\xC4\xA0" "a", 6}}},
        {"merges", json::array({pair("a", "b"), pair("ab", "c"), pair("\xC4\xA0", "a")})}}},
  };
}

Result<VocabMetadata> parse(const json& tokenizer, const json* config = nullptr) {
  const std::string config_text = config != nullptr ? config->dump() : std::string();
  return parse_hf_tokenizer(tokenizer.dump(), config != nullptr ? std::optional<std::string_view>(config_text)
                                                                 : std::nullopt);
}

std::string refusal(const json& tokenizer, const json* config = nullptr) {
  auto v = parse(tokenizer, config);
  EXPECT_FALSE(v) << "accepted: " << tokenizer.dump().substr(0, 200);
  return v ? std::string() : v.error().message;
}

TEST(HfTokenizerJson, TokenTableAsTheConverterWritesIt) {
  auto v = parse(qwen_like());
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->pre, "qwen2");
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "abc", "\xC4\xA0", "\xC4\xA0" "a", "[PAD7]",
                                           "<|endoftext|>", "<|im_end|>", "<think>", "<|fim_pad|>", " user"};
  EXPECT_EQ(v->tokens, tokens);
  auto type = [](TokenType t) { return static_cast<int32_t>(t); };
  const std::vector<int32_t> types = {type(TokenType::Normal),      type(TokenType::Normal),
                                      type(TokenType::Normal),      type(TokenType::Normal),
                                      type(TokenType::Normal),      type(TokenType::Normal),
                                      type(TokenType::Normal),      type(TokenType::Unused),
                                      type(TokenType::Control),     type(TokenType::Control),
                                      type(TokenType::UserDefined),  // not special
                                      type(TokenType::Control),      // not special, but looks it
                                      type(TokenType::UserDefined)};
  EXPECT_EQ(v->types, types);
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b", "ab c", "\xC4\xA0 a"}));
  // Nothing named without a config or a template.
  EXPECT_EQ(v->bos, -1);
  EXPECT_EQ(v->eos, -1);
  EXPECT_FALSE(v->add_bos.has_value());
  EXPECT_TRUE(v->chat_template.empty());
}

TEST(HfTokenizerJson, BothMergeEncodingsGiveTheSameLines) {
  json lines = qwen_like();
  lines["model"]["merges"] = json::array({"a b", "ab c", "\xC4\xA0 a"});
  auto from_lines = parse(lines);
  auto from_pairs = parse(qwen_like());
  ASSERT_TRUE(from_lines) << from_lines.error().message;
  ASSERT_TRUE(from_pairs) << from_pairs.error().message;
  EXPECT_EQ(from_lines->merges, from_pairs->merges);

  // A space inside a pair's part is written as the byte-level space.
  json spaced = qwen_like();
  spaced["model"]["merges"] = json::array({pair(" ", "a")});
  auto v = parse(spaced);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->merges, (std::vector<std::string>{"\xC4\xA0 a"}));
}

TEST(HfTokenizerJson, PreTokenizerNamedAfterItsRegex) {
  EXPECT_EQ(pre_name_of_split_regex(kLlama3Regex), "llama-bpe");
  EXPECT_EQ(pre_name_of_split_regex(kQwen2Regex), "qwen2");
  EXPECT_FALSE(pre_name_of_split_regex("\\s+").has_value());

  json llama = qwen_like();
  llama["pre_tokenizer"] = pre_tokenizer(kLlama3Regex);
  llama["model"]["ignore_merges"] = true;
  llama["normalizer"] = nullptr;
  auto v = parse(llama);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->pre, "llama-bpe");

  // The regex and ignore_merges must agree, or the ids would differ.
  llama["model"]["ignore_merges"] = false;
  EXPECT_NE(refusal(llama).find("ignore_merges"), std::string::npos);

  json unknown = qwen_like();
  unknown["pre_tokenizer"] = pre_tokenizer("\\p{L}+|\\s+");
  const std::string message = refusal(unknown);
  EXPECT_NE(message.find("unknown pre-tokenizer regex '\\p{L}+|\\s+'"), std::string::npos) << message;
}

TEST(HfTokenizerJson, RefusesWhatItCannotConvertByName) {
  auto with = [](auto edit) {
    json j = qwen_like();
    edit(j);
    return refusal(j);
  };
  auto has = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' lacks '" << part << "'";
  };
  has(with([](json& j) { j["model"]["type"] = "WordPiece"; }), "model type 'WordPiece'");
  has(with([](json& j) { j["model"]["type"] = "Unigram"; }), "model type 'Unigram'");
  has(with([](json& j) { j["model"]["byte_fallback"] = true; }), "byte_fallback");
  has(with([](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }), "end_of_word_suffix");
  has(with([](json& j) { j["model"]["dropout"] = 0.1; }), "dropout");
  has(with([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }), "Metaspace");
  has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"].push_back({{"type", "Digits"}}); }), "Digits");
  has(with([](json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"use_regex", true}}; }), "unsupported pre-tokenizer");
  has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; }), "add_prefix_space");
  has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); }), "exactly one ByteLevel");
  has(with([](json& j) { j.erase("pre_tokenizer"); }), "no pre_tokenizer");
  has(with([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }), "normalizer 'Lowercase'");
  has(with([](json& j) { j.erase("decoder"); }), "decoder is missing");
  has(with([](json& j) { j["decoder"] = {{"type", "Metaspace"}}; }), "decoder is 'Metaspace'");
  has(with([](json& j) { j.erase("model"); }), "no model object");
  has(with([](json& j) { j["model"]["vocab"] = json::object(); }), "model.vocab");
  has(with([](json& j) { j["model"]["vocab"]["x"] = -1; }), "id -1");
  has(with([](json& j) { j["model"]["vocab"]["x"] = "7"; }), "not an integer");
  has(with([](json& j) { j["model"]["vocab"]["x"] = 1; }), "id 1 is given to both");
  has(with([](json& j) { j["model"]["merges"] = json::array(); }), "model.merges");
  has(with([](json& j) { j["model"]["merges"].push_back("abc"); }), "merge 3");
  has(with([](json& j) { j["model"]["merges"].push_back("a b c"); }), "merge 3");
  has(with([](json& j) { j["model"]["merges"].push_back(json::array({1, 2})); }), "merge 3");
  has(with([](json& j) { j["model"]["merges"].push_back(pair("a", "")); }), "merge 3");
  has(with([](json& j) { j["added_tokens"] = "none"; }), "added_tokens must be an array");
  has(with([](json& j) { j["added_tokens"].push_back({{"id", 20}}); }), "non-empty content");
  has(with([](json& j) { j["added_tokens"].push_back({{"id", 8}, {"content", "<x>"}}); }), "share id 8");

  EXPECT_NE(parse_hf_tokenizer("{\"model\": ", std::nullopt).error().message.find("tokenizer.json is not valid JSON"),
            std::string::npos);
  EXPECT_NE(parse_hf_tokenizer("[1, 2]", std::nullopt).error().message.find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_hf_tokenizer(qwen_like().dump(), "{").error().message.find("tokenizer_config.json is not valid"),
            std::string::npos);
}

TEST(HfTokenizerJson, SpecialTokensFromTheConfig) {
  const json config = {{"bos_token", nullptr},
                       {"eos_token", "<|im_end|>"},
                       {"pad_token", {{"__type", "AddedToken"}, {"content", "<|endoftext|>"}}},
                       {"unk_token", "<|nowhere|>"},  // not an added token: not written
                       {"add_bos_token", false},
                       {"chat_template", "{{ messages }}"}};
  auto v = parse(qwen_like(), &config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->bos, -1);
  EXPECT_EQ(v->eos, 9);
  EXPECT_EQ(v->pad, 8);
  EXPECT_EQ(v->unk, -1);
  EXPECT_EQ(v->add_bos, false);
  EXPECT_FALSE(v->add_eos.has_value());
  EXPECT_EQ(v->chat_template, "{{ messages }}");

  json bad = config;
  bad["add_bos_token"] = "yes";
  EXPECT_NE(refusal(qwen_like(), &bad).find("add_bos_token must be true or false"), std::string::npos);
  bad = config;
  bad["chat_template"] = 3;
  EXPECT_NE(refusal(qwen_like(), &bad).find("chat_template"), std::string::npos);
}

TEST(HfTokenizerJson, NamedChatTemplates) {
  const json config = {{"chat_template",
                        {{{"name", "default"}, {"template", "D"}},
                         {{"name", "tool use"}, {"template", "T"}},
                         {{"name", "rag"}, {"template", "R"}}}}};
  auto v = parse(qwen_like(), &config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->chat_template, "D");
  using Named = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(v->named_chat_templates, (Named{{"tool_use", "T"}, {"rag", "R"}}));
  const json bad = {{"chat_template", {{{"name", "x"}}}}};
  EXPECT_NE(refusal(qwen_like(), &bad).find("string name and template"), std::string::npos);
}

// Llama-3.1's post-processor: ByteLevel, then a template that starts with BOS.
json with_template(json tokenizer, json single) {
  tokenizer["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}},
        {{"type", "TemplateProcessing"}, {"single", std::move(single)}, {"pair", json::array()}}}}};
  return tokenizer;
}

json special(const char* id) { return {{"SpecialToken", {{"id", id}, {"type_id", 0}}}}; }
json sequence_a() { return {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}; }

TEST(HfTokenizerJson, TemplateProcessingAddsBosLikeTheConverter) {
  const json config = {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|im_end|>"}};
  auto v = parse(with_template(qwen_like(), {special("<|endoftext|>"), sequence_a()}), &config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->bos, 8);
  EXPECT_EQ(v->add_bos, true);
  EXPECT_FALSE(v->add_eos.has_value());

  // A leading token that is not BOS: BOS is not added.
  v = parse(with_template(qwen_like(), {special("<|im_end|>"), sequence_a()}), &config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->add_bos, false);

  // The config's add_bos_token has the last word.
  json no_bos = config;
  no_bos["add_bos_token"] = false;
  v = parse(with_template(qwen_like(), {special("<|endoftext|>"), sequence_a()}), &no_bos);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->add_bos, false);

  // Without a config the template's tokens are BOS and EOS.
  v = parse(with_template(qwen_like(), {special("<|endoftext|>"), sequence_a(), special("<|im_end|>")}));
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->bos, 8);
  EXPECT_EQ(v->eos, 9);
  EXPECT_EQ(v->add_bos, true);
  EXPECT_EQ(v->add_eos, true);

  // A trailing token other than the config's EOS becomes EOS; the old one EOT.
  const json eos_config = {{"eos_token", "<|endoftext|>"}};
  v = parse(with_template(qwen_like(), {sequence_a(), special("<|im_end|>")}), &eos_config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->eos, 9);
  EXPECT_EQ(v->eot, 8);
  EXPECT_EQ(v->add_eos, true);

  json roberta = qwen_like();
  roberta["post_processor"] = {{"type", "RobertaProcessing"}};
  v = parse(roberta, &config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->add_bos, true);
  EXPECT_EQ(v->add_eos, true);
}

// Through GGUF into a working tokenizer: merges apply by rank, added tokens
// keep their raw text and are found inside text.
TEST(HfTokenizerJson, ConvertedVocabularyTokenizes) {
  auto v = parse(qwen_like());
  ASSERT_TRUE(v) << v.error().message;
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  add_vocab_metadata(w, *v);
  const auto bytes = w.serialize();
  auto file = GgufFile::parse(bytes);
  ASSERT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok) << tok.error().message;
  EXPECT_EQ((*tok)->encode("abc ab<think>a<|im_end|>", false, true), (std::vector<int32_t>{4, 5, 3, 10, 0, 9}));
  EXPECT_EQ((*tok)->encode(" user", false, false), (std::vector<int32_t>{12}));
  EXPECT_EQ((*tok)->token_to_piece(10), "<think>");
  EXPECT_EQ((*tok)->token_to_piece(9, true), "<|im_end|>");
}

// A tokenizer built from a converted file, through GGUF.
std::unique_ptr<Tokenizer> tokenizer_of(const VocabMetadata& v, std::vector<std::byte>& bytes,
                                        std::optional<GgufFile>& file) {
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  add_vocab_metadata(w, v);
  bytes = w.serialize();
  auto parsed = GgufFile::parse(bytes);
  EXPECT_TRUE(parsed) << parsed.error().message;
  if (!parsed) return nullptr;
  file.emplace(std::move(*parsed));
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok) << tok.error().message;
  return tok ? std::move(*tok) : nullptr;
}

// NFC applies exactly when the normalizer (or a Sequence of them) says so:
// a decomposed é then encodes as the composed one.
TEST(HfTokenizerJson, NfcNormalizerIsAppliedOnlyWhenAsked) {
  json nfc = qwen_like();
  // é is the bytes C3 A9, written as the byte-level stand-ins U+00C3 U+00A9.
  nfc["model"]["vocab"]["\xC3\x83"] = 13;
  nfc["model"]["vocab"]["\xC2\xA9"] = 14;
  nfc["model"]["vocab"]["\xC3\x83\xC2\xA9"] = 15;
  nfc["model"]["merges"].push_back(pair("\xC3\x83", "\xC2\xA9"));
  const std::string composed = "\xC3\xA9", decomposed = "e\xCC\x81";
  for (const json& normalizer : {json{{"type", "NFC"}},
                                 json{{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}}}) {
    nfc["normalizer"] = normalizer;
    auto v = parse(nfc);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->normalizer, "NFC");
    std::vector<std::byte> bytes;
    std::optional<GgufFile> file;
    const auto tok = tokenizer_of(*v, bytes, file);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(file->get_string(kNormalizerKey).value_or(""), "NFC");
    EXPECT_EQ(tok->encode(composed, false, false), std::vector<int32_t>{15});
    EXPECT_EQ(tok->encode(decomposed, false, false), std::vector<int32_t>{15});
    EXPECT_EQ(tok->encode("<|im_end|>" + decomposed, false, true), (std::vector<int32_t>{9, 15}));
  }
  for (const json& none : {json(nullptr), json{{"type", "Sequence"}, {"normalizers", json::array()}}}) {
    nfc["normalizer"] = none;
    auto v = parse(nfc);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->normalizer, "");
    std::vector<std::byte> bytes;
    std::optional<GgufFile> file;
    const auto tok = tokenizer_of(*v, bytes, file);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(file->find(kNormalizerKey), nullptr);
    EXPECT_EQ(tok->encode(composed, false, false), std::vector<int32_t>{15});
    EXPECT_NE(tok->encode(decomposed, false, false), std::vector<int32_t>{15});
  }
  // Any other step is refused by name, alone or inside a Sequence.
  for (const char* type : {"NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Replace", "Prepend",
                           "BertNormalizer", "Precompiled", "ByteLevel"}) {
    nfc["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", type}}}}};
    const std::string message = refusal(nfc);
    EXPECT_NE(message.find(std::string("normalizer '") + type + "'"), std::string::npos) << message;
  }
  nfc["normalizer"] = {{"type", "Sequence"}};
  EXPECT_NE(refusal(nfc).find("normalizers array"), std::string::npos);
}

TEST(HfTokenizerJson, AnUnknownNormalizerInAGgufIsRefused) {
  auto v = parse(qwen_like());
  ASSERT_TRUE(v) << v.error().message;
  v->normalizer = "NFKC";
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  add_vocab_metadata(w, *v);
  const auto bytes = w.serialize();
  auto file = GgufFile::parse(bytes);
  ASSERT_TRUE(file) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().message.find("unsupported normalizer 'NFKC'"), std::string::npos) << tok.error().message;
}

TEST(HfTokenizerJson, LoadNamesTheMissingFile) {
  auto v = load_hf_tokenizer("/nonexistent/tokenizer.json", "");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("/nonexistent/tokenizer.json"), std::string::npos) << v.error().message;
  const std::string dir = test::temp_dir();
  {
    std::ofstream out(dir + "/tokenizer.json");
    out << qwen_like().dump();
  }
  auto missing_config = load_hf_tokenizer(dir + "/tokenizer.json", dir + "/tokenizer_config.json");
  ASSERT_FALSE(missing_config);
  EXPECT_NE(missing_config.error().message.find("tokenizer_config.json"), std::string::npos);
  auto ok = load_hf_tokenizer(dir + "/tokenizer.json", "");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->tokens.size(), 13u);
}

}  // namespace
}  // namespace clm
