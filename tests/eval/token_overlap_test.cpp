#include "token_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace clm {
namespace {

std::vector<int32_t> range(int32_t begin, int32_t end) {
  std::vector<int32_t> out;
  for (int32_t t = begin; t < end; ++t) out.push_back(t);
  return out;
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

int count(const std::vector<bool>& v) { return static_cast<int>(std::count(v.begin(), v.end(), true)); }

TEST(UnchangedTokens, EditedPreambleMarksTheSharedPrefixAndTheRestAfterTheEdit) {
  // Cached S' + H, asked S + H + Q: S differs from S' in one token at 3.
  const auto h = range(100, 140);
  const auto cached = cat({{1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, h});
  const auto asked = cat({{1, 10, 11, 99, 13, 14, 15, 16, 17, 18, 19}, h, {200, 201}});
  const std::vector<std::vector<int32_t>> earlier = {cached};
  const auto m = unchanged_tokens(asked, earlier, 4);
  ASSERT_EQ(m.size(), asked.size());
  EXPECT_TRUE(m[0] && m[1] && m[2]);
  EXPECT_FALSE(m[3]);
  for (std::size_t i = 4; i < 11 + h.size(); ++i) EXPECT_TRUE(m[i]) << i;
  EXPECT_FALSE(m[asked.size() - 2]);
  EXPECT_FALSE(m.back());
  EXPECT_EQ(count(m), 3 + 7 + static_cast<int>(h.size()));
}

TEST(UnchangedTokens, RunsShorterThanTheMinimumDoNotCount) {
  const std::vector<std::vector<int32_t>> earlier = {{1, 2, 3, 50, 51, 52, 9}};
  // 50 51 52 occurs, but only 3 long; the prefix 1 2 3 always counts.
  const auto m = unchanged_tokens(std::vector<int32_t>{1, 2, 3, 7, 50, 51, 52, 8}, earlier, 4);
  EXPECT_EQ(count(m), 3);
  const auto m3 = unchanged_tokens(std::vector<int32_t>{1, 2, 3, 7, 50, 51, 52, 8}, earlier, 3);
  EXPECT_EQ(count(m3), 6);
}

TEST(UnchangedTokens, TheLastTokenIsNeverUnchanged) {
  const std::vector<int32_t> p = {1, 2, 3, 4};
  const std::vector<std::vector<int32_t>> earlier = {p};
  const auto m = unchanged_tokens(p, earlier, 2);
  EXPECT_EQ(count(m), 3);
  EXPECT_FALSE(m.back());
  EXPECT_EQ(count(unchanged_tokens(p, std::vector<std::vector<int32_t>>{}, 2)), 0);
}

TEST(UnchangedTokens, InsertedTextSplitsTheMatch) {
  // Cached P + H, asked P + X + H + Q.
  const auto p = range(1, 9), x = range(300, 306), h = range(100, 130);
  const std::vector<std::vector<int32_t>> earlier = {cat({p, h})};
  const auto m = unchanged_tokens(cat({p, x, h, {400}}), earlier, 8);
  EXPECT_EQ(count(m), static_cast<int>(p.size() + h.size()));
  for (std::size_t i = p.size(); i < p.size() + x.size(); ++i) EXPECT_FALSE(m[i]);
}

}  // namespace
}  // namespace clm
