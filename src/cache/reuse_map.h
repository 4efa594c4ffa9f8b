// ReuseMap: where each prompt token's K/V came from, token by token, as runs
// in prompt order. The plan knows it at admission (prefix, spans and their
// leads); blend's picks and budget evictions refine it later. It is the
// per-token view of ReuseCounts: counting a map's runs gives the counts.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "cache/reuse_plan.h"

namespace clm {

enum class TokenSource : uint8_t {
  Prefix,      // attached or copied from an identical prefix, exact
  Shift,       // copied from a span elsewhere, K re-rotated
  Recomputed,  // found in the cache but computed anyway
  Computed,    // not found, computed
};

std::string_view to_string(TokenSource source);

struct SourceRun {
  TokenSource source = TokenSource::Computed;
  // Forgotten later under the sequence's KV budget (the source says how it
  // was obtained before that).
  bool evicted = false;
  int32_t begin = 0;
  int32_t length = 0;
  bool operator==(const SourceRun&) const = default;
};

// Runs tiling [0, prompt tokens), adjacent runs always different.
using ReuseMap = std::vector<SourceRun>;

// The map a plan gives: prefix, then per span its lead (recomputed) and the
// rest (shift), computed everywhere else.
ReuseMap reuse_map_of(const ReusePlan& plan, int prompt_tokens);

// Tokens at `positions` (ascending, inside the map) become `source`.
void set_source(ReuseMap& map, std::span<const int32_t> positions, TokenSource source);
// Tokens in the ranges (clipped to the map) are marked evicted.
void mark_evicted(ReuseMap& map, std::span<const PromptRange> ranges);

ReuseCounts count_sources(const ReuseMap& map);
int32_t mapped_tokens(const ReuseMap& map);

}  // namespace clm
