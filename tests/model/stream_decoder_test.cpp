// StreamDecoder: only whole UTF-8 characters leave it, bad bytes become
// U+FFFD, and the streamed text equals the whole-sequence decode.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/tokenizer.h"
#include "support/test_paths.h"

namespace clm {
namespace {

class StreamDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::open(test::shared_file("testdata/tokenizer/ggml-vocab-llama-spm.gguf"));
    ASSERT_TRUE(file) << file.error().message;
    file_ = std::make_unique<GgufFile>(std::move(*file));
    auto tok = Tokenizer::from_gguf(*file_);
    ASSERT_TRUE(tok) << tok.error().message;
    tok_ = std::move(*tok);
  }
  int32_t byte_token(int b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto id = tok_->find_token(name);
    EXPECT_TRUE(id.has_value()) << name;
    return id.value_or(0);
  }
  std::string stream(const std::vector<int32_t>& ids) {
    StreamDecoder d(*tok_);
    std::string out;
    for (int32_t id : ids) out += d.push(id);
    return out + d.flush();
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(StreamDecoderTest, HoldsSplitCharacterUntilComplete) {
  StreamDecoder d(*tok_);
  // U+1F999 (llama emoji) is F0 9F A6 99.
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.push(byte_token(0xA6)), "");
  EXPECT_EQ(d.push(byte_token(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(d.flush(), "");
}

TEST_F(StreamDecoderTest, EmitsCompletePrefixAndHoldsTail) {
  StreamDecoder d(*tok_);
  const auto hello = tok_->encode("Hello", false, false);
  ASSERT_FALSE(hello.empty());
  std::string out;
  for (int32_t id : hello) out += d.push(id);
  EXPECT_EQ(out, " Hello");
  EXPECT_EQ(d.push(byte_token(0xC3)), "");  // first half of "é"
  EXPECT_EQ(d.push(byte_token(0xA9)), "\xC3\xA9");
}

TEST_F(StreamDecoderTest, InvalidBytesBecomeReplacementCharacters) {
  StreamDecoder d(*tok_);
  EXPECT_EQ(d.push(byte_token(0xFF)), "\xEF\xBF\xBD");  // never valid in UTF-8
  EXPECT_EQ(d.push(byte_token(0x80)), "\xEF\xBF\xBD");  // stray continuation byte
  EXPECT_EQ(d.push(byte_token(0xE2)), "");              // could still become a character
  EXPECT_EQ(d.push(byte_token(0x41)), "\xEF\xBF\xBD" "A");
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.push(byte_token(0x82)), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // truncated at the end
  EXPECT_EQ(d.flush(), "");
}

TEST_F(StreamDecoderTest, ConcatenationEqualsDecode) {
  const std::vector<std::string> texts = {
      "Hello world", " leading space", "Führer 🦙.cpp", "нещо на Български", "🚀 (normal) 😶‍🌫️ ✅",
      "我想在apple工作1314151天～", "  two\n\nlines\t"};
  for (const auto& text : texts) {
    const auto with_bos = tok_->encode(text, true, false);
    EXPECT_EQ(stream(with_bos), tok_->decode(with_bos)) << text;
    EXPECT_EQ(tok_->decode(with_bos), text);
    const auto plain = tok_->encode(text, false, false);
    EXPECT_EQ(stream(plain), tok_->decode(plain)) << text;
    EXPECT_EQ(tok_->decode(plain), " " + text);  // no BOS: the prefix space stays
  }
}

TEST_F(StreamDecoderTest, DropsOnlyTheSpaceRightAfterBos) {
  StreamDecoder d(*tok_);
  const auto ids = tok_->encode("Hi there", true, false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(ids[1]), "Hi");
  std::string rest;
  for (std::size_t i = 2; i < ids.size(); ++i) rest += d.push(ids[i]);
  EXPECT_EQ(rest, " there");
}

}  // namespace
}  // namespace clm
