#include "model/unicode_nfc.h"

#include <algorithm>
#include <span>
#include <vector>

#include "model/utf8.h"

namespace clm {

namespace {

// Hangul syllables decompose and compose by arithmetic (Unicode ch. 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// A byte that is not well-formed UTF-8 travels through as a value past the
// code points: a starter that composes with nothing, written back as itself.
constexpr uint32_t kRawByte = 0x110000;

bool is_raw_byte(uint32_t v) { return v >= kRawByte; }

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const std::span<const detail::Decomposition> table(detail::kDecompositions, detail::kDecompositionCount);
  const auto it = std::lower_bound(table.begin(), table.end(), cp,
                                   [](const detail::Decomposition& d, uint32_t c) { return d.cp < c; });
  if (it == table.end() || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  // Canonical mappings nest at most a few levels deep.
  decompose(it->first, out);
  if (it->second != 0) decompose(it->second, out);
}

// Stable sort of each run of non-starters by combining class; starters
// (class 0) stay where they are.
void order_marks(std::vector<uint32_t>& cps, std::vector<uint8_t>& classes) {
  for (std::size_t i = 1; i < cps.size(); ++i) {
    const uint8_t c = classes[i];
    if (c == 0) continue;
    std::size_t j = i;
    while (j > 0 && classes[j - 1] > c) {
      std::swap(cps[j], cps[j - 1]);
      std::swap(classes[j], classes[j - 1]);
      --j;
    }
  }
}

// Canonical composition in place: each character joins the last starter
// unless something kept between them blocks it (a starter, or a mark of the
// same or a higher class).
void compose(std::vector<uint32_t>& cps, std::vector<uint8_t>& classes) {
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t starter = kNone;
  uint8_t last_class = 0;  // of the last character kept after the starter
  std::size_t kept = 0;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const uint32_t cp = cps[i];
    const uint8_t c = classes[i];
    if (starter != kNone && !is_raw_byte(cps[starter]) && !is_raw_byte(cp)) {
      const bool adjacent = kept == starter + 1;
      if (adjacent || (last_class != 0 && last_class < c)) {
        if (const auto composite = canonical_composite(cps[starter], cp)) {
          cps[starter] = *composite;
          continue;
        }
      }
    }
    if (c == 0) starter = kept;
    last_class = c;
    cps[kept] = cp;
    classes[kept] = c;
    ++kept;
  }
  cps.resize(kept);
  classes.resize(kept);
}

// One run of text from an ASCII character (or the start) to just before the
// next: NFC never joins across such a cut, since no composition ends in an
// ASCII character and an ASCII character blocks everything after it from
// the starters before it.
void normalize_run(std::string_view run, std::string& out, std::vector<uint32_t>& cps, std::vector<uint8_t>& classes) {
  cps.clear();
  for (std::size_t pos = 0; pos < run.size();) {
    const Utf8Char ch = utf8_decode_at(run, pos);
    if (ch.cp == kReplacementChar && ch.len == 1) cps.push_back(kRawByte + static_cast<uint8_t>(run[pos]));
    else decompose(ch.cp, cps);
    pos += ch.len;
  }
  classes.resize(cps.size());
  for (std::size_t i = 0; i < cps.size(); ++i)
    classes[i] = is_raw_byte(cps[i]) ? 0 : canonical_combining_class(cps[i]);
  order_marks(cps, classes);
  compose(cps, classes);
  for (uint32_t cp : cps) {
    if (is_raw_byte(cp)) out.push_back(static_cast<char>(cp - kRawByte));
    else utf8_append(out, cp);
  }
}

bool is_ascii(char c) { return static_cast<unsigned char>(c) < 0x80; }

}  // namespace

uint8_t canonical_combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const std::span<const detail::CombiningClassRange> table(detail::kCombiningClassRanges,
                                                           detail::kCombiningClassRangeCount);
  const auto it = std::lower_bound(table.begin(), table.end(), cp,
                                   [](const detail::CombiningClassRange& r, uint32_t c) { return r.last < c; });
  if (it == table.end() || it->first > cp) return 0;
  return it->ccc;
}

std::optional<uint32_t> canonical_composite(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount)
    return first + (second - kTBase);
  const std::span<const detail::Composition> table(detail::kCompositions, detail::kCompositionCount);
  const auto it = std::lower_bound(table.begin(), table.end(), std::pair(first, second),
                                   [](const detail::Composition& c, const std::pair<uint32_t, uint32_t>& key) {
                                     return std::pair(c.first, c.second) < key;
                                   });
  if (it == table.end() || it->first != first || it->second != second) return std::nullopt;
  return it->composite;
}

std::string to_nfc(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  std::vector<uint32_t> cps;
  std::vector<uint8_t> classes;
  std::size_t pos = 0;
  while (pos < utf8.size()) {
    // An ASCII character followed by another (or the end) is a run by
    // itself, already normalized.
    if (is_ascii(utf8[pos]) && (pos + 1 == utf8.size() || is_ascii(utf8[pos + 1]))) {
      out.push_back(utf8[pos++]);
      continue;
    }
    std::size_t end = pos + 1;
    while (end < utf8.size() && !is_ascii(utf8[end])) ++end;
    normalize_run(utf8.substr(pos, end - pos), out, cps, classes);
    pos = end;
  }
  return out;
}

}  // namespace clm
