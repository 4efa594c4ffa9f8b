// Unicode Normalization Form C on cases whose answers UAX #15 and the
// Unicode database fix: canonical pairs, Hangul, composition exclusions,
// the ordering of combining marks and blocking. (The reference tests check
// every code point against an independent implementation as well.)
#include "model/unicode_nfc.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace clm {
namespace {

// UTF-8 of code points, so that cases read as the standard writes them.
std::string u(std::initializer_list<char32_t> cps) {
  std::string s;
  for (char32_t c : cps) {
    const auto cp = static_cast<uint32_t>(c);
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

// Pieces appended in order (GCC 12 warns falsely on chains of string +).
std::string join(std::initializer_list<std::string_view> pieces) {
  std::string s;
  for (std::string_view p : pieces) s.append(p);
  return s;
}

TEST(UnicodeNfc, ComposesCanonicalPairs) {
  EXPECT_EQ(to_nfc(u({'e', 0x301})), u({0xE9}));         // é
  EXPECT_EQ(to_nfc(u({'n', 0x303})), u({0xF1}));         // ñ
  EXPECT_EQ(to_nfc(u({'A', 0x30A})), u({0xC5}));         // Å
  EXPECT_EQ(to_nfc(u({0x3B1, 0x301})), u({0x3AC}));      // ά
  EXPECT_EQ(to_nfc(u({0x41, 0x308, 0x304})), u({0x1DE}));  // Ǟ: a composite composes again
  EXPECT_EQ(to_nfc(join({"combining ", u({'e', 0x301}), " vs ", u({0xE9}), ", ", u({'n', 0x303})})),
            join({"combining ", u({0xE9}), " vs ", u({0xE9}), ", ", u({0xF1})}));
  // Text already in NFC is unchanged, ASCII or not.
  for (const std::string& text : {std::string("plain ASCII, 123!"), u({0xE9, 0x4E2D, 0x1F600}), std::string()})
    EXPECT_EQ(to_nfc(text), text);
  EXPECT_EQ(canonical_composite('e', 0x301), 0xE9u);
  EXPECT_FALSE(canonical_composite('x', 0x301));
}

TEST(UnicodeNfc, HangulComposesByArithmetic) {
  EXPECT_EQ(to_nfc(u({0x1100, 0x1161})), u({0xAC00}));          // L V -> LV
  EXPECT_EQ(to_nfc(u({0x1100, 0x1161, 0x11A8})), u({0xAC01}));  // L V T -> LVT
  EXPECT_EQ(to_nfc(u({0xAC00, 0x11A8})), u({0xAC01}));          // LV T -> LVT
  EXPECT_EQ(to_nfc(u({0x1112, 0x1175, 0x11C2})), u({0xD7A3}));  // the last syllable
  // U+11A7 is the base before the trailing consonants, not one of them.
  EXPECT_EQ(to_nfc(u({0xAC00, 0x11A7})), u({0xAC00, 0x11A7}));
  // An LVT syllable takes no second trailing consonant.
  EXPECT_EQ(to_nfc(u({0xAC01, 0x11A8})), u({0xAC01, 0x11A8}));
  EXPECT_EQ(to_nfc(u({0xD55C, 0xAE00})), u({0xD55C, 0xAE00}));  // 한글 stays
}

TEST(UnicodeNfc, ExclusionsDecomposeAndStayDecomposed) {
  // Script-specific exclusion: DEVANAGARI LETTER QA.
  EXPECT_EQ(to_nfc(u({0x958})), u({0x915, 0x93C}));
  EXPECT_EQ(to_nfc(u({0x915, 0x93C})), u({0x915, 0x93C}));
  // Singletons: ANGSTROM SIGN and OHM SIGN become the letters.
  EXPECT_EQ(to_nfc(u({0x212B})), u({0xC5}));
  EXPECT_EQ(to_nfc(u({0x2126})), u({0x3A9}));
  // A non-starter decomposition: COMBINING GREEK DIALYTIKA TONOS.
  EXPECT_EQ(to_nfc(u({0x344})), u({0x308, 0x301}));
  // A post-composition-version exclusion beyond the BMP.
  EXPECT_EQ(to_nfc(u({0x1D15E})), u({0x1D157, 0x1D165}));
  // Compatibility mappings are not canonical: the ligature stays.
  EXPECT_EQ(to_nfc(u({0xFB01})), u({0xFB01}));
}

TEST(UnicodeNfc, OrdersCombiningMarksBeforeComposing) {
  EXPECT_EQ(canonical_combining_class(0x323), 220);
  EXPECT_EQ(canonical_combining_class(0x302), 230);
  EXPECT_EQ(canonical_combining_class('a'), 0);
  // Dot below (220) sorts before the circumflex (230), in either input order,
  // and both compose: ậ.
  EXPECT_EQ(to_nfc(u({'a', 0x302, 0x323})), u({0x1EAD}));
  EXPECT_EQ(to_nfc(u({'a', 0x323, 0x302})), u({0x1EAD}));
  // A precomposed letter is taken apart to take a mark in canonical order:
  // Ḋ + dot below becomes Ḍ + dot above.
  EXPECT_EQ(to_nfc(u({0x1E0A, 0x323})), u({0x1E0C, 0x307}));
  // Marks of one class keep their order; only the first composes.
  EXPECT_EQ(to_nfc(u({'a', 0x301, 0x300})), u({0xE1, 0x300}));
  EXPECT_EQ(to_nfc(u({'a', 0x300, 0x301})), u({0xE0, 0x301}));
}

TEST(UnicodeNfc, BlockedMarksDoNotCompose) {
  // A mark of the same class in between blocks the second.
  EXPECT_EQ(to_nfc(u({'a', 0x305, 0x301})), u({'a', 0x305, 0x301}));
  // A mark of a lower class does not block: cedilla (202) then acute.
  EXPECT_EQ(to_nfc(u({'c', 0x327, 0x301})), u({0x1E09}));
  // A starter in between blocks; one at the start of the text has no starter.
  EXPECT_EQ(to_nfc(u({'e', 'b', 0x301})), u({'e', 'b', 0x301}));
  EXPECT_EQ(to_nfc(u({0x301, 'e'})), u({0x301, 'e'}));
}

TEST(UnicodeNfc, IllFormedBytesPassThroughAndComposeWithNothing) {
  for (const std::string& bytes : {std::string("\xFF\xFE"), std::string("abc\xC3"), std::string("\xE4\xB8 x"),
                                  std::string("\xED\xA0\x80 surrogate"), std::string("a\x80\x80z")})
    EXPECT_EQ(to_nfc(bytes), bytes);
  // A stray byte between a letter and a mark blocks the composition.
  EXPECT_EQ(to_nfc(join({"e\xFF", u({0x301})})), join({"e\xFF", u({0x301})}));
  EXPECT_EQ(to_nfc(join({"\xFF", u({'e', 0x301})})), join({"\xFF", u({0xE9})}));
  // A literal U+FFFD is a character like any other.
  EXPECT_EQ(to_nfc(u({0xFFFD, 'e', 0x301})), u({0xFFFD, 0xE9}));
}

}  // namespace
}  // namespace clm
