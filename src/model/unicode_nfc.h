// Unicode Normalization Form C (UAX #15), for vocabularies whose
// tokenizer.json asks for it (Qwen's): canonical decomposition, canonical
// ordering of combining marks, then canonical composition, Hangul included.
// Text already in NFC (all ASCII, most text) comes back unchanged. Bytes that
// are not well-formed UTF-8 pass through as they are and compose with
// nothing. Tables are generated (tools/gen_nfc_tables.py):
// unicode_nfc_classes.cpp, unicode_nfc_decompositions.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clm {

std::string to_nfc(std::string_view utf8);

// The canonical combining class of a code point (0 for starters and
// unassigned code points).
uint8_t canonical_combining_class(uint32_t cp);
// The primary composite of two code points, if they compose.
std::optional<uint32_t> canonical_composite(uint32_t first, uint32_t second);

namespace detail {
struct CombiningClassRange {
  uint32_t first;
  uint32_t last;
  uint8_t ccc;
};
// A one-step canonical decomposition, sorted by cp: cp -> first (second),
// second 0 for a singleton. Applied again to its parts it gives the full one.
struct Decomposition {
  uint32_t cp;
  uint32_t first;
  uint32_t second;
};
// Sorted by (first, second).
struct Composition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};
extern const CombiningClassRange kCombiningClassRanges[];
extern const std::size_t kCombiningClassRangeCount;
extern const Decomposition kDecompositions[];
extern const std::size_t kDecompositionCount;
extern const Composition kCompositions[];
extern const std::size_t kCompositionCount;
}  // namespace detail

}  // namespace clm
