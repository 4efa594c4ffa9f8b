// Pre-tokenizers without reference vocabularies here (llama3, qwen2) and the
// GPT-2 pattern, checked against splits a regex engine produced for the
// published patterns; plus the Unicode classes and UTF-8 helpers under them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/pre_tokenizer.h"
#include "model/unicode_data.h"
#include "model/utf8.h"

namespace clm {
namespace {

struct SplitCase {
  PreTokenizerKind kind;
  std::string text;
  std::vector<std::string> words;
};

const std::vector<SplitCase> kCases = {
    {PreTokenizerKind::Llama3, "Hello, y'all! I'VE 12345 apples\n\n  and\t\tpears...\r\n  ", {"Hello", ",", " y", "'all", "!", " I", "'VE", " ", "123", "45", " apples", "\n\n", " ", " and", "\t", "\tpears", "...\r\n", "  "}},
    {PreTokenizerKind::Llama3, "  x  \n \n y'S 3.14159 ¿qué? 你好世界 ١٢٣", {" ", " x", "  \n \n", " y", "'S", " ", "3", ".", "141", "59", " ¿", "qué", "?", " 你好世界", " ", "١٢٣"}},
    {PreTokenizerKind::Llama3, " \u00a0a\u3000b  ", {" ", "\u00a0a", "\u3000b", "  "}},
    {PreTokenizerKind::Qwen2, "Hello, y'all! I'VE 12345 apples\n\n  and\t\tpears...\r\n  ", {"Hello", ",", " y", "'all", "!", " I", "'VE", " ", "1", "2", "3", "4", "5", " apples", "\n\n", " ", " and", "\t", "\tpears", "...\r\n", "  "}},
    {PreTokenizerKind::Qwen2, "  x  \n \n y'S 3.14159 ¿qué? 你好世界 ١٢٣", {" ", " x", "  \n \n", " y", "'S", " ", "3", ".", "1", "4", "1", "5", "9", " ¿", "qué", "?", " 你好世界", " ", "١", "٢", "٣"}},
    {PreTokenizerKind::Qwen2, " \u00a0a\u3000b  ", {" ", "\u00a0a", "\u3000b", "  "}},
    {PreTokenizerKind::Gpt2, "Hello, y'all! I'VE 12345 apples\n\n  and\t\tpears...\r\n  ", {"Hello", ",", " y", "'", "all", "!", " I", "'", "VE", " 12345", " apples", "\n\n ", " and", "\t", "\t", "pears", "...", "\r\n  "}},
    {PreTokenizerKind::Gpt2, "  x  \n \n y'S 3.14159 ¿qué? 你好世界 ١٢٣", {" ", " x", "  \n \n", " y", "'", "S", " 3", ".", "14159", " ¿", "qué", "?", " 你好世界", " ١٢٣"}},
    {PreTokenizerKind::Gpt2, " \u00a0a\u3000b  ", {" ", "\u00a0", "a", "\u3000", "b", "  "}},
};

TEST(PreTokenizer, MatchesRegexSplits) {
  for (const auto& c : kCases) {
    const auto views = pre_tokenize(c.kind, c.text);
    const std::vector<std::string> words(views.begin(), views.end());
    EXPECT_EQ(words, c.words) << "kind " << static_cast<int>(c.kind) << " text '" << c.text << "'";
  }
}

TEST(PreTokenizer, NamesAndCoverage) {
  EXPECT_EQ(pre_tokenizer_from_name(""), PreTokenizerKind::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("default"), PreTokenizerKind::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("qwen2"), PreTokenizerKind::Qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizerKind::Llama3);
  EXPECT_EQ(pre_tokenizer_from_name("refact"), PreTokenizerKind::Starcoder);
  EXPECT_FALSE(pre_tokenizer_from_name("bert-bge").has_value());
  // Whatever the kind, words cover the text exactly, even invalid UTF-8.
  const std::string text = "a\xFF\xC3 b\n\n 12 \xE2\x82\xAC!";
  for (auto kind : {PreTokenizerKind::Gpt2, PreTokenizerKind::Llama3, PreTokenizerKind::Qwen2,
                    PreTokenizerKind::DeepseekLlm, PreTokenizerKind::DeepseekCoder, PreTokenizerKind::Falcon,
                    PreTokenizerKind::Starcoder}) {
    std::string joined;
    for (auto w : pre_tokenize(kind, text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    EXPECT_EQ(joined, text);
  }
}

TEST(UnicodeData, Classes) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0x4E16));   // 世
  EXPECT_TRUE(is_letter(0x0431));   // б
  EXPECT_FALSE(is_letter('1'));
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0x0663));   // Arabic-Indic three
  EXPECT_TRUE(is_number(0x00BD));   // ½ is No
  EXPECT_TRUE(is_punctuation(','));
  EXPECT_FALSE(is_punctuation('$'));  // Sc, a symbol
  EXPECT_TRUE(unicode_flags('$') & ucat::kSymbol);
  EXPECT_TRUE(unicode_flags(0x0301) & ucat::kMark);
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x2003u, 0x3000u}) EXPECT_TRUE(is_whitespace(cp)) << cp;
  EXPECT_FALSE(is_whitespace(0x1C));  // not White_Space, though Python's isspace says so
  EXPECT_FALSE(is_whitespace(0x200B));
  EXPECT_EQ(unicode_flags(0x110000), 0);
  EXPECT_EQ(unicode_flags(0x0378), 0);  // unassigned
}

TEST(Utf8, DecodeEncodeAndSanitize) {
  const auto cps = utf8_decode("a\xC3\xA9\xF0\x9F\xA6\x99\xFF");
  ASSERT_EQ(cps.size(), 4u);
  EXPECT_EQ(cps[1].cp, 0xE9u);
  EXPECT_EQ(cps[2].cp, 0x1F999u);
  EXPECT_EQ(cps[2].offset, 3u);
  EXPECT_EQ(cps[3].cp, kReplacementChar);
  EXPECT_EQ(cps[3].len, 1u);
  EXPECT_EQ(utf8_decode("\xED\xA0\x80").size(), 3u);  // a surrogate is three bad bytes
  EXPECT_EQ(utf8_encode(0x20AC), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_encode(0xD800), "\xEF\xBF\xBD");
  std::size_t held = 0;
  EXPECT_EQ(utf8_sanitize("ok\xE2\x82", false, &held), "ok");
  EXPECT_EQ(held, 2u);
  EXPECT_EQ(utf8_sanitize("ok\xE2\x82", true, &held), "ok\xEF\xBF\xBD");
  EXPECT_EQ(held, 0u);
  EXPECT_EQ(utf8_sanitize("\xC0\xAF", false, &held), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong form
  EXPECT_TRUE(utf8_is_valid(""));
  EXPECT_TRUE(utf8_is_valid("caf\xC3\xA9 \xF0\x9F\xA6\x99 \xEF\xBF\xBD"));
  EXPECT_FALSE(utf8_is_valid("ok\xE2\x82"));  // truncated
  EXPECT_FALSE(utf8_is_valid("\xC0\xAF"));
  EXPECT_FALSE(utf8_is_valid("\xED\xA0\x80"));
  EXPECT_FALSE(utf8_is_valid("a\x80"));
}

}  // namespace
}  // namespace clm
