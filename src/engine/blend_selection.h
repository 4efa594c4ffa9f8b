// Which copied tokens blend recomputes. Every copied token of a prompt was
// probed: the first layers computed in its new context, then the distance
// between the V it would write at the probe layer and the V copied into its
// slot.
// Tokens whose context changed what they attend to deviate most, and the
// deviation of the first layers predicts where the copy is wrong later on
// (CacheBlend), so those are recomputed in full and the rest keep the copy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/reuse_plan.h"

namespace clm {

// Adaptive selection recomputes the fewest tokens holding this share of the
// total deviation, within [kBlendAdaptiveMin, kBlendAdaptiveMax] of the
// tokens. The figures are where docs/QUALITY.md's blend rows level off.
inline constexpr double kBlendAdaptiveMass = 0.95;
inline constexpr double kBlendAdaptiveMin = 0.05;
inline constexpr double kBlendAdaptiveMax = 0.30;

// Indices (ascending) of the tokens to recompute: the round(ratio * n) most
// deviant (ties: the earlier first), or with `adaptive` the share above.
// ratio is clamped to [0, 1]; an empty input selects nothing.
std::vector<int32_t> select_for_recompute(std::span<const float> deviation, float ratio, bool adaptive);

// `ranges` (sorted, disjoint) with every position of `positions` (sorted)
// added, as sorted disjoint ranges with touching ones merged.
std::vector<PromptRange> add_positions(const std::vector<PromptRange>& ranges, std::span<const int32_t> positions);

}  // namespace clm
