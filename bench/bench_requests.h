// What the end-to-end reuse benchmarks share: a greedy request of a fixed
// length, run to its end with the reuse counts checked, and how many leading
// tokens two continuations agree on.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "util/error.h"

namespace clm {

// Greedy, never stopping at an end token: the same amount of work in every mode.
GenerateOptions greedy_request(int max_tokens, ReuseMode mode);

// Runs one request on the caller's thread, appending its tokens to `tokens`
// (if given). Fails, naming `bench`, when the engine does or when the reuse
// counts do not add up to the prompt's length.
Result<GenerationStats> generate_counted(Engine& engine, std::span<const int32_t> prompt, const GenerateOptions& g,
                                         std::vector<int32_t>* tokens, std::string_view bench);

// Leading tokens on which a and b agree.
int leading_agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace clm
