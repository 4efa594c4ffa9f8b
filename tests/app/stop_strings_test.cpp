// StopStringFilter: held-back prefixes, matches across pieces, and the
// invariant that the released text is the generation cut at the first stop.
#include <gtest/gtest.h>

#include <random>

#include "app/stop_strings.h"

namespace clm {
namespace {

std::string run(StopStringFilter& f, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += f.push(p);
  return out + f.flush();
}

TEST(StopStrings, NoStopsPassesEverythingAtOnce) {
  StopStringFilter f({});
  EXPECT_EQ(f.push("hello"), "hello");
  EXPECT_EQ(f.flush(), "");
  EXPECT_FALSE(f.stopped());
}

TEST(StopStrings, HoldsBackAPossibleStart) {
  StopStringFilter f({"\nUser:"});
  EXPECT_EQ(f.push("Hi there\n"), "Hi there");
  EXPECT_EQ(f.push("Us"), "");
  EXPECT_EQ(f.push("ually"), "\nUsually");
  EXPECT_FALSE(f.stopped());
}

TEST(StopStrings, MatchAcrossPiecesCutsBeforeIt) {
  StopStringFilter f({"\nUser:"});
  EXPECT_EQ(f.push("Fine.\nU"), "Fine.");
  EXPECT_EQ(f.push("ser: next"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.matched(), "\nUser:");
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.flush(), "");
}

TEST(StopStrings, EarliestOfSeveralWins) {
  StopStringFilter f({"cd", "b"});
  EXPECT_EQ(f.push("abcd"), "a");
  EXPECT_EQ(f.matched(), "b");
}

TEST(StopStrings, FlushReleasesAnUnfinishedPrefix) {
  StopStringFilter f({"END"});
  EXPECT_EQ(f.push("the EN"), "the ");
  EXPECT_EQ(f.flush(), "EN");
}

TEST(StopStrings, RandomSplitsGiveTheCutText) {
  std::mt19937 rng(7);
  const std::vector<std::string> stops = {"ab", "bba", "ccc"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) text += "abc"[rng() % 3];
    std::size_t cut = std::string::npos;
    for (const auto& s : stops) cut = std::min(cut, text.find(s));
    const std::string want = cut == std::string::npos ? text : text.substr(0, cut);
    std::vector<std::string> pieces;
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t len = 1 + rng() % 4;
      pieces.push_back(text.substr(i, len));
      i += len;
    }
    StopStringFilter f(stops);
    EXPECT_EQ(run(f, pieces), want) << text;
    EXPECT_EQ(f.stopped(), cut != std::string::npos) << text;
  }
}

}  // namespace
}  // namespace clm
