// PromptTyper on the real model's tokenizer: every prompt token gets the
// type of its semantic block, turn markup cuts, and the intent label is the
// type of the last user turn. Then the intent label through the scheduler:
// a document cached under a question is reused for another question and
// not for an instruction.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine/prompt_typer.h"
#include "engine/scheduler_rig.h"
#include "support/test_paths.h"
#include "text/block_type.h"

namespace clm {
namespace {

using test::greedy_request;
using test::Rig;
using test::RigOptions;
using test::run_one;

Model& real() { return test::real_model(); }

std::vector<int32_t> text(const std::string& s, bool bos = false) { return real().tokenizer().encode(s, bos, false); }

std::vector<int32_t> join(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

uint8_t code(BlockType t) { return static_cast<uint8_t>(t); }

const std::string kUser = "<|im_start|>user\n";
const std::string kTurnEnd = "<|im_end|>\n<|im_start|>assistant\n";

TEST(PromptTyper, LabelsEveryTokenByBlockAndTheIntentByTheLastUserTurn) {
  const auto typer = PromptTyper::with_default_rules();
  const std::string question = "Why was the dog sad?";
  const auto prompt = join({text(kUser, true), text(question), text(kTurnEnd)});
  const PromptLabels l = typer->label(real().tokenizer(), prompt);
  ASSERT_EQ(l.tokens.size(), prompt.size());
  EXPECT_EQ(l.intent, code(BlockType::Question));
  EXPECT_EQ(l.tokens.front().type, code(BlockType::Turn));
  EXPECT_TRUE(l.tokens.front().block_start);
  EXPECT_EQ(l.tokens.back().type, code(BlockType::Turn));
  EXPECT_TRUE(l.tokens.back().block_end);
  // The question's tokens: one block, typed, bounded by the turns.
  const std::size_t q_begin = text(kUser, true).size(), q_end = q_begin + text(question).size();
  // (A lone space token before the closing markup is whitespace after the
  // question, which goes to the block before it.)
  std::size_t turn = q_end;
  while (turn < l.tokens.size() && l.tokens[turn].type != code(BlockType::Turn)) ++turn;
  ASSERT_LT(turn, l.tokens.size());
  EXPECT_LE(turn - q_end, 1u);
  EXPECT_TRUE(l.tokens[q_begin].block_start);
  EXPECT_TRUE(l.tokens[turn - 1].block_end);
  EXPECT_TRUE(l.tokens[turn].block_start);
  for (std::size_t t = q_begin; t < turn; ++t) EXPECT_EQ(l.tokens[t].type, code(BlockType::Question)) << t;
  for (std::size_t t = q_begin + 1; t < turn; ++t) EXPECT_FALSE(l.tokens[t].block_start) << t;
  // The block ends at its last word or mark; whitespace after it may be cut.
  for (std::size_t t = q_begin; t + 1 < q_end; ++t) EXPECT_FALSE(l.tokens[t].block_end) << t;
  EXPECT_TRUE(l.tokens[q_end - 1].block_end);
  // Blocks of at least 8 tokens are whole, reusable snippets.
  EXPECT_EQ(l.tokens[q_begin].whole_block, turn - q_begin >= 8);
}

TEST(PromptTyper, TheIntentIsTheLastUserTurnsNotAnEarlierOne) {
  const auto typer = PromptTyper::with_default_rules();
  const std::string chat = "<|im_start|>user\nWhy was the dog sad?<|im_end|>\n<|im_start|>assistant\n"
                           "He lost his ball.<|im_end|>\n<|im_start|>user\nPlease tell me a story about it."
                           "<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(typer->label(real().tokenizer(), text(chat, true)).intent, code(BlockType::Instruction));
  // A user turn no rule claims is context; a prompt with no user turn has
  // no intent label.
  const std::string plain = "<|im_start|>user\nThe dog ran home.<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(typer->label(real().tokenizer(), text(plain, true)).intent, code(BlockType::Context));
  EXPECT_EQ(typer->label(real().tokenizer(), text("Once upon a time, Why was the dog sad?", true)).intent,
            TokenLabel::kAnyType);
}

TEST(PromptTyper, ARuleFileRetypesAndABadOneIsAClearError) {
  const std::string dir = test::temp_dir();
  const std::string path = dir + "/rules.json";
  std::ofstream(path) << R"({"min_block_length": 2, "rules": [{"pattern": "dog[^.]*\\.", "type": "step"}]})";
  auto typer = PromptTyper::from_rules_file(path);
  ASSERT_TRUE(typer) << typer.error().message;
  const PromptLabels l = (*typer)->label(real().tokenizer(), text("The dog ran home. It was late.", true));
  bool any_step = false;
  for (const TokenLabel& t : l.tokens) any_step |= t.type == code(BlockType::Step);
  EXPECT_TRUE(any_step);

  std::ofstream(dir + "/bad.json") << R"({"rules": [{"pattern": "a", "type": "paragraph"}]})";
  auto bad = PromptTyper::from_rules_file(dir + "/bad.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.json"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(PromptTyper::from_rules_file(dir + "/missing.json"));
}

// A system turn holding a document, then a user turn. The document is
// cached under one start and asked for after another, so only span reuse
// can find it.
std::vector<int32_t> with_document(const std::string& start, const std::string& user_turn) {
  const std::string doc =
      "Lily and Ben went to the park. They saw a big red ball under a tree. Ben wanted to kick the ball, but Lily "
      "said it was not theirs.\n\n";
  return join({text("<|im_start|>system\n" + start + "\n", true), text(doc), text("<|im_end|>\n" + kUser),
               text(user_turn), text(kTurnEnd)});
}

int shifted_after(const std::string& cached_turn, const std::string& asked_turn) {
  RigOptions o;
  o.n_blocks = 96;
  o.scheduler.n_ctx = 512;
  o.scheduler.reuse.mode = ReuseMode::Shift;
  o.scheduler.reuse.lead = 0;
  Rig rig(real(), o);
  run_one(rig, greedy_request(with_document("You are kind.", cached_turn), 0));
  const RequestSummary s = run_one(rig, greedy_request(with_document("You tell stories.", asked_turn), 1));
  return s.reuse.shift;
}

TEST(PromptTyper, TailReuseNeedsTheLastUserTurnOfTheSameType) {
  EXPECT_GT(shifted_after("Why was the ball red?", "Why did Ben want the ball?"), 20);
  EXPECT_EQ(shifted_after("Why was the ball red?", "Please tell me what Ben did next."), 0);
}

}  // namespace
}  // namespace clm
