#include "rag_prompts.h"

#include <numeric>
#include <string>
#include <utility>

#include "dialogue_text.h"

namespace clm {

namespace {

// Seeds of the dialogue generator: the system prompt's, then one per chunk.
constexpr uint32_t kSystemSeed = 7;
constexpr uint32_t kFirstChunkSeed = 1000;

}  // namespace

Result<RagCorpus> make_rag_corpus(const Tokenizer& tokenizer, const RagPromptSizes& s) {
  if (s.system_tokens < 2) return fail("bench rag: --system-tokens must be at least 2 (BOS and one token)");
  if (s.chunk_tokens < 1 || s.question_tokens < 1 || s.chunks < 1)
    return fail("bench rag: --chunks, --chunk-tokens and --question-tokens must be at least 1");
  if (s.pool < s.chunks)
    return fail("bench rag: --pool (" + std::to_string(s.pool) + ") must hold at least --chunks (" +
                std::to_string(s.chunks) + ") chunks");
  RagCorpus c;
  c.system.push_back(tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : 0);
  const auto text = dialogue_tokens(tokenizer, s.system_tokens - 1, kSystemSeed);
  c.system.insert(c.system.end(), text.begin(), text.end());
  for (int i = 0; i < s.pool; ++i)
    c.chunks.push_back(dialogue_tokens(tokenizer, s.chunk_tokens, kFirstChunkSeed + static_cast<uint32_t>(i)));
  return c;
}

RagRequest draw_rag_request(const Tokenizer& tokenizer, const RagCorpus& corpus, const RagPromptSizes& s, int index,
                            std::mt19937& rng) {
  std::vector<int> order(corpus.chunks.size());
  std::iota(order.begin(), order.end(), 0);
  RagRequest r;
  r.prompt = corpus.system;
  for (std::size_t k = 0; k < static_cast<std::size_t>(s.chunks); ++k) {
    // std::uniform_int_distribution differs between standard libraries;
    // a plain modulo of mt19937 (whose output is specified) does not.
    const std::size_t pick = k + rng() % (order.size() - k);
    std::swap(order[k], order[pick]);
    r.drawn.push_back(order[k]);
    const auto& chunk = corpus.chunks[static_cast<std::size_t>(order[k])];
    r.prompt.insert(r.prompt.end(), chunk.begin(), chunk.end());
  }
  const auto question = question_tokens(tokenizer, s.question_tokens, index);
  r.prompt.insert(r.prompt.end(), question.begin(), question.end());
  return r;
}

}  // namespace clm
