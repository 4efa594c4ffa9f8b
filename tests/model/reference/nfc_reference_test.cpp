// clmcache's NFC against JavaScript's String.prototype.normalize (ICU, an
// independent implementation): every code point our Unicode tables know and
// many random sequences of starters, combining marks and Hangul jamo, each
// as it is and in its canonical decomposition (by the reference), which NFC
// must put back together (or, for the exclusions, not). Code points newer
// than our tables are left out: normalization is stable for the code points
// a version assigns, so the two may differ only on newer ones.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/reference/real_vocab.h"
#include "model/unicode_data.h"
#include "model/unicode_nfc.h"
#include "model/utf8.h"
#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

bool known(uint32_t cp) { return unicode_flags(cp) != 0 && !(cp >= 0xD800 && cp <= 0xDFFF); }

std::vector<std::string> texts_to_normalize() {
  std::vector<uint32_t> starters, marks;
  std::vector<std::string> texts;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (!known(cp)) continue;
    texts.push_back(utf8_encode(cp));
    (canonical_combining_class(cp) == 0 ? starters : marks).push_back(cp);
  }
  // Hangul jamo and the marks that compose most, drawn often.
  const std::vector<uint32_t> composing = {0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x30A,
                                           0x30C, 0x323, 0x327, 0x328, 0x93C, 0x3099, 0x1161, 0x1175, 0x11A8,
                                           0x11C2, 0x11A7, 0x0CD5, 0x0DCF, 0x102E, 0x1B35};
  const std::vector<uint32_t> bases = {'a', 'e', 'o', 'u', 'A', 'C', 'n', 0x3B1, 0x3C9, 0x415, 0x928,
                                       0xCC6, 0xDD9, 0x1025, 0x1B05, 0x1100, 0x1112, 0xAC00, 0xAC01};
  std::mt19937 rng(20240611);
  auto pick = [&](const std::vector<uint32_t>& v) { return v[rng() % v.size()]; };
  for (int i = 0; i < 100000; ++i) {
    std::string s;
    utf8_append(s, rng() % 2 ? pick(bases) : pick(starters));
    const int n = static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) utf8_append(s, rng() % 2 ? pick(composing) : pick(marks));
    if (rng() % 4 == 0) utf8_append(s, pick(bases));
    texts.push_back(s);
  }
  return texts;
}

TEST(NfcVsReference, EveryKnownCodePointAndManySequencesMatchJavaScript) {
  const std::vector<std::string> texts = texts_to_normalize();
  ASSERT_GT(texts.size(), 200000u);
  const std::string input = test::temp_dir() + "/nfc_texts.json";
  std::ofstream(input) << nlohmann::json(texts).dump();
  const std::string cmd = "cd " + test::shell_quote(CLMCACHE_MODEL_NODE_DIR) + " && node nfc_reference.mjs " +
                          test::shell_quote(input);
  const test::CommandResult r = test::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("nfc")) << r.out.substr(0, 200);
  ASSERT_TRUE(j.contains("nfd")) << r.out.substr(0, 200);
  const auto want = j["nfc"].get<std::vector<std::string>>();
  const auto decomposed = j["nfd"].get<std::vector<std::string>>();
  ASSERT_EQ(want.size(), texts.size());
  ASSERT_EQ(decomposed.size(), texts.size());
  int failures = 0;
  auto check = [&](std::size_t i, const std::string& text) {
    const std::string got = to_nfc(text);
    if (got == want[i]) return;
    if (++failures <= 15)
      ADD_FAILURE() << "case " << i << " '" << test::show_text(text) << "'\n got:  " << test::show_text(got)
                    << "\n want: " << test::show_text(want[i]);
  };
  int changed = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    check(i, texts[i]);
    if (decomposed[i] != texts[i]) {
      check(i, decomposed[i]);
      ++changed;
    }
  }
  EXPECT_GT(changed, 10000) << "decompositions checked";
  EXPECT_EQ(failures, 0) << "of " << texts.size() << " texts (reference Unicode " << j.value("unicode", "?") << ")";
}

}  // namespace
}  // namespace clm
