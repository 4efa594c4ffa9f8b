// TokenLabel: what the semantic splitter said about one prompt token, kept
// by the cache beside the token id, so that a cached span is reused only
// where its text plays the same part (DESIGN.md, "a snippet is only reused
// for a span of the same type"). The cache does not know the splitter: a
// type is a small opaque number that must be equal at the source and the
// destination, and block edges are flags.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace clm {

struct TokenLabel {
  // No type known: a generated token, or a prompt nobody typed. It matches
  // every type, so untyped caches behave as before the guard existed.
  static constexpr uint8_t kAnyType = 0xFF;

  uint8_t type = kAnyType;
  bool block_start = true;   // a semantic block starts at this token
  // ... ends with this token, or nothing but whitespace follows it in its
  // block (a paragraph's trailing line break is not what makes it whole).
  bool block_end = true;
  // Its block has at least min_block_length tokens: a snippet worth reusing
  // whole. An untyped token is a block of its own that is never one.
  bool whole_block = false;

  bool operator==(const TokenLabel&) const = default;
};

// The type guard: a cached token may stand in for a prompt token only if
// their types agree (or either is untyped).
inline bool same_type(uint8_t a, uint8_t b) { return a == TokenLabel::kAnyType || b == TokenLabel::kAnyType || a == b; }

// One prompt's labels: one per token (empty: untyped), and its intent label,
// the type of its last user turn (kAnyType: no user turn found).
struct PromptLabels {
  std::vector<TokenLabel> tokens;
  uint8_t intent = TokenLabel::kAnyType;

  TokenLabel at(std::size_t i) const { return i < tokens.size() ? tokens[i] : TokenLabel{}; }
};

}  // namespace clm
