// SessionStore on the real stories260K tokenizer: a turn's generated ids are
// reused when the next prompt extends it, never when the text would change,
// and sessions expire.
#include <gtest/gtest.h>

#include <algorithm>

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

// Records what the store tells its observers, in order.
struct RecordingObserver : SessionObserver {
  std::vector<std::string> events;
  void session_remembered(const SessionRecord& turn) override {
    events.push_back("+" + turn.id + ":" + std::to_string(turn.tokens.size()));
  }
  void session_forgotten(const std::string& id, ForgetCause cause) override {
    const char* why = cause == ForgetCause::TimedOut ? "timeout" : cause == ForgetCause::Displaced ? "displaced" : "damaged";
    events.push_back("-" + id + ":" + why);
  }
};

TEST_F(SessionStoreTest, ObserversHearEveryTurnAndEveryForgottenSession) {
  SessionStore store(10, 2, clock());
  RecordingObserver seen;
  store.add_observer(&seen);
  store.remember("a", "x", {1});
  store.remember("a", "xy", {1, 2});  // its next turn
  now_ += 1;
  store.remember("b", "y", {2});
  now_ += 1;
  store.remember("c", "z", {3});  // full: "a" goes
  now_ += 20;
  EXPECT_EQ(store.size(), 0u);  // timed out
  ASSERT_EQ(seen.events.size(), 7u);
  EXPECT_EQ(seen.events[0], "+a:1");
  EXPECT_EQ(seen.events[1], "+a:2");
  EXPECT_EQ(seen.events[2], "+b:1");
  EXPECT_EQ(seen.events[3], "-a:displaced");
  EXPECT_EQ(seen.events[4], "+c:1");
  std::vector<std::string> expired(seen.events.begin() + 5, seen.events.end());
  std::sort(expired.begin(), expired.end());
  EXPECT_EQ(expired, (std::vector<std::string>{"-b:timeout", "-c:timeout"}));
}

TEST_F(SessionStoreTest, RestoredSessionsAreReusedAndDamagedOnesSkipped) {
  const std::string text = "User: Hi\nAssistant: Hello";
  const std::vector<int32_t> ids = tok_->encode(text, true, true);
  const int64_t now_ms = 1'800'000'000'000;
  std::vector<SessionRecord> saved = {
      {"kept", text, ids, now_ms - 5'000},
      {"expired", text, ids, now_ms - 100'000},
      {"wrong-text", text + "!", ids, now_ms - 1'000},
      {"out-of-vocabulary", text, {1, tok_->n_vocab()}, now_ms - 1'000},
  };
  SessionStore store(60, 100, clock());
  RecordingObserver seen;
  store.add_observer(&seen);
  testing::internal::CaptureStderr();
  EXPECT_EQ(store.restore(saved, *tok_, now_ms), 1u);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
  std::sort(seen.events.begin(), seen.events.end());
  EXPECT_EQ(seen.events,
            (std::vector<std::string>{"-expired:timeout", "-out-of-vocabulary:damaged", "-wrong-text:damaged"}));
  EXPECT_EQ(store.size(), 1u);
  const SessionPrompt p = store.prompt_tokens("kept", text + "\nUser: And?", *tok_);
  EXPECT_EQ(p.reused_tokens, static_cast<int>(ids.size()));

  // Its age carries over: 5 s used of 60, so untouched it lapses 55 s later.
  SessionStore aging(60, 100, clock());
  EXPECT_EQ(aging.restore({saved[0]}, *tok_, now_ms), 1u);
  now_ += 54;
  EXPECT_EQ(aging.size(), 1u);
  now_ += 2;
  EXPECT_EQ(aging.size(), 0u);
}

}  // namespace
}  // namespace clm
