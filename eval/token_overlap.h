// Which tokens of a new prompt a cache holding earlier prompts could supply
// at all: the baseline that "share of unchanged tokens reused" is measured
// against, computed from the tokens alone, independent of the cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace clm {

// Marks the tokens of `prompt` that are unchanged with respect to `earlier`:
// its longest common prefix with any earlier prompt, then, scanning left to
// right, every run of at least `min_run` tokens that occurs in an earlier
// prompt (longest run first at each start). The last prompt token is never
// marked: its row must be computed to produce logits.
std::vector<bool> unchanged_tokens(std::span<const int32_t> prompt, std::span<const std::vector<int32_t>> earlier,
                                   int min_run);

}  // namespace clm
