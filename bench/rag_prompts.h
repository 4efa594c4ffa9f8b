// The prompts of `clmcache bench rag`: a system prompt, a pool of document
// chunks that a RAG server computes once each on its own, and requests that
// put K chunks drawn from the pool, in a shuffled order, between the system
// prompt and a question.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

struct RagCorpus {
  std::vector<int32_t> system;               // BOS, then system_tokens - 1 tokens of text
  std::vector<std::vector<int32_t>> chunks;  // the pool, chunk_tokens each, no BOS
};

struct RagPromptSizes {
  int system_tokens = 0;  // BOS included
  int pool = 0;
  int chunk_tokens = 0;
  int chunks = 0;  // drawn per request
  int question_tokens = 0;
};

// Fails with a message naming the flag when a size is out of range (a
// system prompt of at least 2 tokens, chunks of at least 1, K <= P).
Result<RagCorpus> make_rag_corpus(const Tokenizer& tokenizer, const RagPromptSizes& sizes);

struct RagRequest {
  std::vector<int> drawn;       // pool indices, in prompt order
  std::vector<int32_t> prompt;  // system, the drawn chunks, question `index`
};

// Draws sizes.chunks distinct chunks in a random order (a Fisher-Yates
// prefix driven by `rng`, the same on every platform) and appends question
// `index`.
RagRequest draw_rag_request(const Tokenizer& tokenizer, const RagCorpus& corpus, const RagPromptSizes& sizes,
                            int index, std::mt19937& rng);

}  // namespace clm
