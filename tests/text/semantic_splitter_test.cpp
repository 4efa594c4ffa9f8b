// The splitter's promises: coverage, precedence between rules, turn
// boundaries, min_block_length, limits and linear-time matching.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "text/semantic_splitter.h"
#include "split_test_support.h"

namespace clm {
namespace {

using test::expect_tiling;
using test::split_chars;
using test::typed_texts;
using test::TypedText;
using Expect = std::vector<TypedText>;

SemanticSplitter with_rules(std::initializer_list<std::pair<const char*, BlockType>> rules,
                            SplitterOptions options = {}) {
  SemanticSplitter splitter(options);
  for (const auto& [pattern, type] : rules) EXPECT_TRUE(splitter.add_rule(pattern, type).has_value()) << pattern;
  return splitter;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(SemanticSplitter, EmptyInputHasNoBlocks) {
  EXPECT_TRUE(split_chars(SemanticSplitter::with_default_rules(), "").empty());
}

TEST(SemanticSplitter, TokensWithoutTextFormOneContextBlock) {
  // A prompt of only a BOS token: it covers no bytes but is still covered.
  const auto tokens = TokenOffsets::from_starts({0}, 0);
  ASSERT_TRUE(tokens);
  const auto blocks = SemanticSplitter::with_default_rules().split("", *tokens);
  ASSERT_TRUE(blocks);
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].type, BlockType::Context);
  EXPECT_EQ((*blocks)[0].tokens, (TokenRange{0, 1}));
}

TEST(SemanticSplitter, NoRulesMeansParagraphsOfContext) {
  const std::string text = "one\n\ntwo";
  EXPECT_EQ(typed_texts(split_chars(SemanticSplitter(), text), text),
            (Expect{{"context", "one\n\n"}, {"context", "two"}}));
}

TEST(SemanticSplitter, EarliestStartWinsOverRuleOrder) {
  const auto splitter = with_rules({{"bc", BlockType::Question}, {"abcd", BlockType::Step}});
  const std::string text = "xabcdx";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"context", "x"}, {"step", "abcd"}, {"context", "x"}}));
}

TEST(SemanticSplitter, SameStartEarlierRuleWinsAndTheOtherKeepsTheRest) {
  const auto splitter = with_rules({{"ab", BlockType::Question}, {"abcd", BlockType::Step}});
  const std::string text = "abcd";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text), (Expect{{"question", "ab"}, {"step", "cd"}}));
  // Listed the other way round, the longer rule takes all.
  const auto swapped = with_rules({{"abcd", BlockType::Step}, {"ab", BlockType::Question}});
  EXPECT_EQ(typed_texts(split_chars(swapped, text), text), (Expect{{"step", "abcd"}}));
}

TEST(SemanticSplitter, TrimmedMatchMustStillBeLongEnough) {
  SemanticSplitter splitter;
  ASSERT_TRUE(splitter.add_rule(R"(\[A\])", BlockType::Section));
  ASSERT_TRUE(splitter.add_rule(R"([^\n]+)", BlockType::Document, 10));
  std::string text = "[A] long enough text";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"section", "[A] "}, {"document", "long enough text"}}));
  text = "[A] short";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text), (Expect{{"section", "[A] "}, {"context", "short"}}));
}

TEST(SemanticSplitter, EmptyMatchesMakeNoBlocks) {
  const auto splitter = with_rules({{"x*", BlockType::Step}});
  const std::string text = "ab中xxc";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"context", "ab中"}, {"step", "xx"}, {"context", "c"}}));
}

TEST(SemanticSplitter, ShortBlocksAreNotReusable) {
  SplitterOptions options;
  options.min_block_length = 8;
  const auto splitter = with_rules({{R"([^.?]+\?)", BlockType::Question}}, options);
  const std::string text = "Why? The sky is blue today.";
  const auto blocks = split_chars(splitter, text);
  ASSERT_EQ(typed_texts(blocks, text), (Expect{{"question", "Why? "}, {"context", "The sky is blue today."}}));
  EXPECT_FALSE(blocks[0].reusable);  // 5 tokens: kept as a block, not stored as a snippet
  EXPECT_TRUE(blocks[1].reusable);
  options.min_block_length = 0;
  for (const auto& b : split_chars(with_rules({{R"([^.?]+\?)", BlockType::Question}}, options), text))
    EXPECT_TRUE(b.reusable);
}

TEST(SemanticSplitter, ChatMlTurnsAlwaysCut) {
  const std::string text =
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nIs the sky<|im_end|>\n"
      "<|im_start|>user\nblue?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(typed_texts(split_chars(SemanticSplitter::with_default_rules(), text), text),
            (Expect{{"turn", "<|im_start|>system\n"},
                    {"context", "You are helpful."},
                    {"turn", "<|im_end|>\n<|im_start|>user\n"},
                    {"context", "Is the sky"},  // no question spans a turn boundary
                    {"turn", "<|im_end|>\n<|im_start|>user\n"},
                    {"question", "blue?"},
                    {"turn", "<|im_end|>\n<|im_start|>assistant\n"}}));
}

TEST(SemanticSplitter, OtherTemplatesTurnMarkup) {
  const auto splitter = SemanticSplitter::with_default_rules();
  std::string text =
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"turn", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"},
                    {"question", "What is 2+2?"},
                    {"turn", "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"}}));
  text = "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello there [/INST]";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"turn", "<s>[INST] <<SYS>>\n"},
                    {"context", "Be brief."},
                    {"turn", "\n<</SYS>>\n\n"},
                    {"context", "Hello there"},
                    {"turn", " [/INST]"}}));
  text = "<|user|>\nHi!</s>\n<|assistant|>\n";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"turn", "<|user|>\n"}, {"context", "Hi!"}, {"turn", "</s>\n<|assistant|>\n"}}));
  text = "User: Why?\nAssistant:";
  EXPECT_EQ(typed_texts(split_chars(splitter, text), text),
            (Expect{{"turn", "User: "}, {"question", "Why?\n"}, {"turn", "Assistant:"}}));
}

TEST(SemanticSplitter, TurnMarkupDetectionCanBeTurnedOff) {
  SplitterOptions options;
  options.detect_turn_markup = false;
  const std::string text = "<|user|>\nHi";
  EXPECT_EQ(typed_texts(split_chars(SemanticSplitter(options), text), text), (Expect{{"context", "<|user|>\nHi"}}));
}

TEST(SemanticSplitter, NamedTurnStartsCutExactly) {
  const auto splitter = SemanticSplitter::with_default_rules();
  const std::string text = "Hello there. How are you?";
  const auto tokens = TokenOffsets::per_character(text);
  const std::size_t starts[] = {6};
  const auto blocks = splitter.split(text, tokens, starts);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, tokens);
  EXPECT_EQ(typed_texts(*blocks, text),
            (Expect{{"context", "Hello "}, {"context", "there. "}, {"question", "How are you?"}}));
  EXPECT_EQ((*blocks)[1].tokens.begin, 6u);

  const std::size_t past[] = {tokens.size() + 1};
  const auto bad = splitter.split(text, tokens, past);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("past the 25 tokens"), std::string::npos) << bad.error().message;
}

TEST(SemanticSplitter, CutInsideATokenSnapsBackToItsStart) {
  // Tokens "Why", "?", " The", " end": the question ends after "?", and the
  // context block would start at "The", inside " The": that token, space
  // included, goes to the block after the cut.
  const std::string text = "Why? The end";
  const auto tokens = TokenOffsets::from_starts({0, 3, 4, 8}, text.size());
  ASSERT_TRUE(tokens);
  const auto blocks = SemanticSplitter::with_default_rules().split(text, *tokens);
  ASSERT_TRUE(blocks) << blocks.error().message;
  expect_tiling(*blocks, text, *tokens);
  ASSERT_EQ(typed_texts(*blocks, text), (Expect{{"question", "Why?"}, {"context", " The end"}}));
  EXPECT_EQ((*blocks)[0].tokens, (TokenRange{0, 2}));
  EXPECT_EQ((*blocks)[1].tokens, (TokenRange{2, 4}));
}

TEST(SemanticSplitter, BlockInsideOneTokenJoinsTheNextBlock) {
  const auto splitter = with_rules({{"b", BlockType::Step}});
  const std::string text = "abc";
  const auto tokens = TokenOffsets::from_starts({0}, text.size());  // one token for all
  ASSERT_TRUE(tokens);
  const auto blocks = splitter.split(text, *tokens);
  ASSERT_TRUE(blocks);
  expect_tiling(*blocks, text, *tokens);
  EXPECT_EQ(typed_texts(*blocks, text), (Expect{{"context", "abc"}}));
}

TEST(SemanticSplitter, RefusesOffsetsOfAnotherTextAndOversizedInput) {
  const auto splitter = SemanticSplitter::with_default_rules();
  const auto wrong = splitter.split("hello", TokenOffsets::per_character("hello!"));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("6 bytes, not 5"), std::string::npos) << wrong.error().message;

  SplitterOptions options;
  options.max_input_bytes = 4;
  const auto big = SemanticSplitter(options).split("hello", TokenOffsets::per_character("hello"));
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("at most 4"), std::string::npos) << big.error().message;
}

TEST(SemanticSplitter, RefusesBadPatternsWithRe2sReason) {
  SemanticSplitter splitter;
  auto bad = splitter.add_rule("(unclosed", BlockType::Question);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("missing )"), std::string::npos) << bad.error().message;
  bad = splitter.add_rule("", BlockType::Question);
  ASSERT_FALSE(bad);
  bad = splitter.add_rule(std::string(kMaxPatternBytes + 1, 'a'), BlockType::Question);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("at most 4096"), std::string::npos) << bad.error().message;
  // Small in text, huge compiled: refused by RE2's repetition limit, or by
  // the memory bound (every letter of Unicode, 1000 times).
  bad = splitter.add_rule("((a{100}){100}){100}", BlockType::Question);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("invalid repetition size"), std::string::npos) << bad.error().message;
  bad = splitter.add_rule(R"(\pL{1000})", BlockType::Question);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("pattern too large"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(splitter.rules().empty());
}

TEST(SemanticSplitter, RuleCountIsBounded) {
  SemanticSplitter splitter;
  for (std::size_t i = 0; i < SemanticSplitter::kMaxRules; ++i) ASSERT_TRUE(splitter.add_rule("a", BlockType::Step));
  EXPECT_FALSE(splitter.add_rule("a", BlockType::Step));
}

TEST(SemanticSplitter, CatastrophicBacktrackingPatternRunsInLinearTime) {
  // (a+)+$ on "aaa…ab" takes exponential time in a backtracking engine.
  const auto splitter = with_rules({{"(a+)+$", BlockType::Question}, {"(x+x+)+y", BlockType::Step}});
  const std::string text = std::string(200'000, 'a') + "b";
  const auto start = std::chrono::steady_clock::now();
  const auto blocks = split_chars(splitter, text);
  EXPECT_LT(seconds_since(start), 2.0);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].type, BlockType::Context);
}

TEST(SemanticSplitter, MegabyteInputSplitsInBoundedTime) {
  std::string text;
  const std::string para =
      "[Context]:\nThe fox lives in the woods.\nWhy does he live there? Please answer briefly.\n"
      "1. Find the fox.\n2. Ask him.\n第一步：找到狐狸。它住在哪里？请回答。\n"
      "Once upon a time a little fox lived in the woods and played all day long with his friends the rabbits, "
      "from morning to night, from spring to winter, year after year, and everybody was happy.\n\n"
      "<|im_end|>\n<|im_start|>user\n";
  while (text.size() < (1u << 20)) text += para;
  const auto splitter = SemanticSplitter::with_default_rules();
  const auto start = std::chrono::steady_clock::now();
  const auto blocks = split_chars(splitter, text);
  const double elapsed = seconds_since(start);
  EXPECT_LT(elapsed, 10.0);  // 0.1-0.25 s in a release build, 0.5 s with sanitizers
  const std::size_t copies = text.size() / para.size();
  std::size_t questions = 0, documents = 0, turns = 0, steps = 0;
  for (const auto& b : blocks) {
    questions += b.type == BlockType::Question;
    documents += b.type == BlockType::Document;
    turns += b.type == BlockType::Turn;
    steps += b.type == BlockType::Step;
  }
  EXPECT_EQ(questions, copies);
  EXPECT_EQ(documents, copies);
  EXPECT_EQ(turns, copies);
  EXPECT_EQ(steps, 3 * copies);
  std::printf("split %zu bytes into %zu blocks in %.3f s\n", text.size(), blocks.size(), elapsed);
}

TEST(SemanticSplitter, DegenerateMegabyteInputsStayFast) {
  // Repetitive text made of the default rules' own markers, on one line or
  // on many: every rule's search stays linear.
  const auto splitter = SemanticSplitter::with_default_rules();
  for (const std::string unit : {"please ", "吗", "1.\n", "[", "a. ", "?", "根据第", "<|im_start|>", "\n"}) {
    // 256 KiB each: a search quadratic in the input would blow far past the bound.
    std::string text;
    while (text.size() < (1u << 18)) text += unit;
    const auto start = std::chrono::steady_clock::now();
    const auto blocks = split_chars(splitter, text);
    const double elapsed = seconds_since(start);
    EXPECT_LT(elapsed, 5.0) << unit;
    EXPECT_FALSE(blocks.empty());
    std::printf("'%s' x %zu: %zu blocks in %.3f s\n", unit.c_str(), text.size() / unit.size(), blocks.size(), elapsed);
  }
}

}  // namespace
}  // namespace clm
