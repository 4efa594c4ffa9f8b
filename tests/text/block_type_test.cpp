#include <gtest/gtest.h>

#include "text/block_type.h"
#include "text/token_offsets.h"

namespace clm {
namespace {

TEST(BlockType, NamesRoundTripAndUnknownIsRefused) {
  EXPECT_EQ(all_block_types().size(), 7u);
  for (BlockType t : all_block_types()) EXPECT_EQ(parse_block_type(to_string(t)), t);
  EXPECT_EQ(to_string(BlockType::Question), "question");
  EXPECT_FALSE(parse_block_type("Question"));
  EXPECT_FALSE(parse_block_type(""));
}

TEST(TokenOffsets, RefusesStartsThatDoNotTileTheText) {
  EXPECT_TRUE(TokenOffsets::from_starts({0, 2, 2, 5}, 6));
  EXPECT_TRUE(TokenOffsets::from_starts({}, 0));
  EXPECT_FALSE(TokenOffsets::from_starts({}, 3));
  EXPECT_FALSE(TokenOffsets::from_starts({1, 2}, 3));
  EXPECT_FALSE(TokenOffsets::from_starts({0, 2, 1}, 3));
  EXPECT_FALSE(TokenOffsets::from_starts({0, 4}, 3));
}

TEST(TokenOffsets, TokenAtSkipsTokensWithoutBytes) {
  // BOS (no bytes), "ab", a control token (no bytes), "cde", EOS (no bytes).
  const auto t = TokenOffsets::from_starts({0, 0, 2, 2, 5}, 5);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token_at(0), 1u);
  EXPECT_EQ(t->token_at(1), 1u);
  EXPECT_EQ(t->token_at(2), 3u);
  EXPECT_EQ(t->token_at(4), 3u);
  EXPECT_EQ(t->token_at(5), 5u);
  EXPECT_EQ(t->start(5), 5u);
  EXPECT_EQ(t->count({1, 3}), 2u);
}

TEST(TokenOffsets, PerCharacterCountsUtf8Characters) {
  const auto t = TokenOffsets::per_character("a中\xff");
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.start(1), 1u);
  EXPECT_EQ(t.start(2), 4u);
  EXPECT_EQ(t.text_size(), 5u);
}

}  // namespace
}  // namespace clm
