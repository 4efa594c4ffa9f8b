// The per-row half of sampling a step's outputs, spread over the thread pool:
// with 32 sequences decoding, sampling and the log-sum-exp of each row over
// the whole vocabulary, one row after another, kept one core busy while the
// others waited.
#include <algorithm>
#include <vector>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"
#include "model/logprobs.h"

namespace clm {

void Scheduler::score_outputs(const std::vector<OutputRow>& outputs, std::span<const float> logits) {
  const std::size_t n_vocab = static_cast<std::size_t>(model_.config().n_vocab);
  // Kept across steps (only ever grown), so a steady decode step allocates
  // nothing here unless a request asks for top log-probabilities or logits.
  if (events_.size() < outputs.size()) events_.resize(outputs.size());
  sample_rows_.ensure(static_cast<std::size_t>(threads_.size()), n_vocab);
  // Each row reads its own logits and writes its own event or prompt entry,
  // and draws from its own sequence's generator (one sampling row per
  // sequence per step): a row's result is what it would be alone, whatever
  // the batch around it or the number of threads.
  threads_.parallel_for(outputs.size(), [&](std::size_t begin, std::size_t end) {
    // The sampler edits its row in place (penalties), so it gets a copy: one
    // row per running chunk, which stays in cache from row to row.
    ChunkBuffers::Claim claim = sample_rows_.claim();
    std::vector<float>& edited_row = claim.buffer();
    for (std::size_t o = begin; o < end; ++o) {
      Sequence& s = *outputs[o].seq;
      if (s.finished) continue;
      const std::span<const float> row = logits.subspan(o * n_vocab, n_vocab);
      const int32_t prompt_pos = outputs[o].prompt_pos;
      if (prompt_pos >= 0 && prompt_pos + 1 < s.n_prompt) {  // scores the next prompt token
        const int32_t next = s.request.prompt[static_cast<std::size_t>(prompt_pos + 1)];
        PromptLogprob lp;
        lp.logprob = token_logprob(row, next);
        if (s.request.prompt_logprobs > 0) lp.top = top_logprobs(row, s.request.prompt_logprobs);
        s.prompt_logprobs[static_cast<std::size_t>(prompt_pos + 1)] = std::move(lp);
        continue;
      }
      TokenEvent& ev = events_[o];
      if (s.request.record_logits) ev.logits.assign(row.begin(), row.end());
      else ev.logits.clear();
      if (s.request.top_logprobs > 0) ev.top_logprobs = top_logprobs(row, s.request.top_logprobs);
      else ev.top_logprobs.clear();
      const std::span<float> edited(edited_row.data(), n_vocab);
      std::copy(row.begin(), row.end(), edited.begin());
      ev.id = s.sampler.sample(edited, s.history);
      ev.logprob = token_logprob(row, ev.id);
    }
  });
}

}  // namespace clm
