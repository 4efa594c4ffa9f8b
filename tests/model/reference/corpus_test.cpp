// The committed corpus (code, many scripts, emoji, digits, whitespace,
// contractions, special-token text) encoded by clmcache and by Hugging
// Face's tokenizer (node encode_reference.mjs) must give the same ids, with
// special-token text recognised and not; and what clmcache encodes must
// decode back to the same bytes, whole and streamed token by token.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/unicode_nfc.h"
#include "model/utf8.h"
#include "model/vocab_metadata.h"
#include "model/reference/real_vocab.h"

namespace clm {
namespace {

constexpr int kMaxReported = 15;

class CorpusVsReference : public ::testing::TestWithParam<const char*> {};

void compare(const test::RealVocab& vocab, const std::vector<std::string>& corpus,
             const std::vector<std::vector<int32_t>>& want, bool parse_special) {
  ASSERT_EQ(want.size(), corpus.size());
  int failures = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const auto got = vocab.tokenizer->encode(corpus[i], false, parse_special);
    if (got == want[i]) continue;
    if (++failures <= kMaxReported) {
      ADD_FAILURE() << vocab.family << (parse_special ? " (special)" : " (plain)") << " case " << i << " '"
                    << test::show_text(corpus[i]) << "'\n got:  " << test::show_ids(got)
                    << "\n want: " << test::show_ids(want[i]);
    }
  }
  EXPECT_EQ(failures, 0) << "of " << corpus.size() << " cases";
}

TEST_P(CorpusVsReference, IdsEqualHuggingFaceTokenizer) {
  const test::RealVocab* vocab = test::real_vocab(GetParam());
  ASSERT_NE(vocab, nullptr);
  const auto corpus = test::tokenizer_corpus();
  ASSERT_GE(corpus.size(), 400u);
  const test::ReferenceIds ref = test::reference_ids(GetParam());
  compare(*vocab, corpus, ref.special, true);
  compare(*vocab, corpus, ref.plain, false);
}

// Concatenated pieces give the text back byte for byte: control tokens
// rendered when special-token text was parsed, and not needed otherwise. A
// vocabulary that normalizes (Qwen's NFC) gives the normalized text back:
// the whole text's NFC in plain mode; with special tokens parsed, the text
// between them is normalized piece by piece, as Hugging Face does.
TEST_P(CorpusVsReference, DecodeGivesTheTextBack) {
  const test::RealVocab* vocab = test::real_vocab(GetParam());
  ASSERT_NE(vocab, nullptr);
  const Tokenizer& tok = *vocab->tokenizer;
  const bool nfc = vocab->file->find(kNormalizerKey) != nullptr;
  int normalized = 0;
  for (const std::string& text : test::tokenizer_corpus()) {
    const std::string want = nfc ? to_nfc(text) : text;
    if (want != text) ++normalized;
    const auto plain = tok.encode(text, false, false);
    EXPECT_EQ(tok.decode(plain), want) << test::show_text(text);
    std::string rendered;
    for (int32_t id : tok.encode(text, false, true)) rendered += tok.token_to_piece(id, true);
    EXPECT_EQ(nfc ? to_nfc(rendered) : rendered, want) << test::show_text(text);
  }
  if (nfc) {
    EXPECT_GE(normalized, 10) << "corpus texts that NFC changes";
  }
}

// Byte-level BPE encodes any bytes, valid UTF-8 or not.
TEST_P(CorpusVsReference, InvalidUtf8RoundTrips) {
  const test::RealVocab* vocab = test::real_vocab(GetParam());
  ASSERT_NE(vocab, nullptr);
  const Tokenizer& tok = *vocab->tokenizer;
  for (const std::string& text : {std::string("\xFF\xFE"), std::string("abc\xC3"), std::string("\xE4\xB8 x"),
                                 std::string("\xC0\xAF overlong"), std::string("\xED\xA0\x80 surrogate"),
                                 std::string("a\x80\x80\x80z"), std::string("\xF4\x90\x80\x80 too high")}) {
    const auto ids = tok.encode(text, false, false);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(tok.decode(ids), text) << test::show_text(text);
  }
}

// The streamed text, one token at a time, equals the whole decode; the
// corpus must contain tokens that end inside a character, or this would
// not test the holding back of partial UTF-8.
TEST_P(CorpusVsReference, StreamedDecodeEqualsWholeDecode) {
  const test::RealVocab* vocab = test::real_vocab(GetParam());
  ASSERT_NE(vocab, nullptr);
  const Tokenizer& tok = *vocab->tokenizer;
  int split_characters = 0;
  for (const std::string& text : test::tokenizer_corpus()) {
    const auto ids = tok.encode(text, true, true);
    StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = tok.token_to_piece(id);
      std::size_t held = 0;
      utf8_sanitize(piece, false, &held);
      if (held > 0) ++split_characters;
      const std::string out = stream.push(id);
      std::size_t out_held = 0;
      EXPECT_EQ(utf8_sanitize(out, false, &out_held), out) << "streamed text is not whole UTF-8";
      streamed += out;
    }
    streamed += stream.flush();
    EXPECT_EQ(streamed, tok.decode(ids)) << test::show_text(text);
  }
  EXPECT_GT(split_characters, 10);
}

INSTANTIATE_TEST_SUITE_P(RealVocabs, CorpusVsReference, ::testing::Values("llama3", "qwen3"));

}  // namespace
}  // namespace clm
