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
// n tokens of a new customer question: "Customer:" and then question
// `index`, whose first word differs from that of index + 1 (so two
// consecutive questions share only the turn marker).
std::vector<int32_t> question_tokens(const Tokenizer& tokenizer, int n, int index);

}  // namespace clm
