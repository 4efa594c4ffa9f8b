// SessionStore on the real stories260K tokenizer: a turn's generated ids are
// reused when the next prompt extends it, never when the text would change,
// and sessions expire.
#include <gtest/gtest.h>

#include "engine/session_store.h"
#include "model/gguf.h"
#include "support/test_paths.h"

namespace clm {
namespace {

class SessionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::open(test::shared_file("models/stories260K.gguf"));
    ASSERT_TRUE(file) << file.error().message;
    auto tok = Tokenizer::from_gguf(*file);
    ASSERT_TRUE(tok) << tok.error().message;
    tok_ = std::move(*tok);
  }
  std::unique_ptr<Tokenizer> tok_;
  double now_ = 100.0;
  std::function<double()> clock() {
    return [this] { return now_; };
  }
};

TEST_F(SessionStoreTest, ReusesTheTurnsOwnIds) {
  SessionStore store(60, 100, clock());
  const std::string prompt = "User: Hi\nAssistant:";
  std::vector<int32_t> ids = tok_->encode(prompt, true, true);
  // A reply as the model might have produced it: " there" spelled as single
  // characters, which no fresh encoding gives.
  for (const char* piece : {"\xe2\x96\x81", "t", "h", "e", "r", "e"}) {
    auto id = tok_->find_token(piece);
    ASSERT_TRUE(id) << piece;
    ids.push_back(*id);
  }
  const std::string text = tok_->decode(ids);
  store.remember("s", text, ids);
  const std::string next = text + "\nUser: And?\nAssistant:";
  const SessionPrompt p = store.prompt_tokens("s", next, *tok_);
  ASSERT_EQ(p.reused_tokens, static_cast<int>(ids.size()));
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), p.tokens.begin()));
  EXPECT_EQ(tok_->decode(p.tokens), tok_->decode(tok_->encode(next, true, true)));
  EXPECT_NE(p.tokens, tok_->encode(next, true, true));
}

TEST_F(SessionStoreTest, FreshEncodingWhenTheTextDiverges) {
  SessionStore store(60, 100, clock());
  const std::string text = "User: Hi\nAssistant: Hello";
  store.remember("s", text, tok_->encode(text, true, true));
  const std::string other = "User: Bye\nAssistant:";
  const SessionPrompt p = store.prompt_tokens("s", other, *tok_);
  EXPECT_EQ(p.reused_tokens, 0);
  EXPECT_EQ(p.tokens, tok_->encode(other, true, true));
  EXPECT_EQ(store.prompt_tokens("", text + "!", *tok_).reused_tokens, 0);
  EXPECT_EQ(store.prompt_tokens("unknown", text + "!", *tok_).reused_tokens, 0);
}

TEST_F(SessionStoreTest, ExpiresAndCaps) {
  SessionStore store(10, 2, clock());
  store.remember("a", "x", {1});
  store.remember("b", "y", {2});
  EXPECT_EQ(store.size(), 2u);
  now_ += 1;
  store.remember("c", "z", {3});  // evicts the least recently used, "a"
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.prompt_tokens("a", "xx", *tok_).reused_tokens, 0);
  now_ += 20;
  EXPECT_EQ(store.size(), 0u);
}

}  // namespace
}  // namespace clm
