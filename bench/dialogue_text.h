// Token sequences for the dialogue benchmark: plausible customer-service
// text of an exact token length, built by encoding generated sentences with
// the model's own tokenizer and cutting at the wanted count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/tokenizer.h"

namespace clm {

// n tokens of dialogue text (no BOS). `seed` varies the sentences, so two
// seeds give different text.
std::vector<int32_t> dialogue_tokens(const Tokenizer& tokenizer, int n, uint32_t seed);

}  // namespace clm
