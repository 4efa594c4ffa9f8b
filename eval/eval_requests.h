// What the evaluations share when they drive an engine: a case file's
// prompts tokenized as `clmcache run` would (and checked against the
// context), one greedy request run to completion, an empty cache between
// runs, and a prompt-logprob entry widened to the full distribution.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model_config.h"
#include "model/tokenizer.h"
#include "evict_cases.h"
#include "reuse_cases.h"
#include "util/error.h"

namespace clm {

struct TokenizedCase {
  std::vector<std::vector<int32_t>> warm;
  std::vector<int32_t> ask;
  std::optional<std::vector<int32_t>> reference;
};

// The context an evaluation runs at: the one asked for, else the model's
// training context, else 4096 when the model does not say.
int eval_context(int requested, const ModelConfig& config);

// "case 3 (ep-003)", for messages.
std::string case_name(const ReuseCase& c, std::size_t i);

// Every case's prompts with BOS as `clmcache run` adds it; a prompt with no
// tokens, or an ask that with its continuation (the reference, or
// greedy_tokens) does not fit n_ctx, is an error naming the case and field.
Result<std::vector<TokenizedCase>> tokenize_cases(const Tokenizer& tok, const ReuseCaseSet& set, int n_ctx,
                                                  int greedy_tokens);

// What every evaluation reads before building an engine: the model's shape,
// the context it runs at (eval_context) and its cases tokenized, so that a
// case that does not fit fails before any engine is built.
struct EvalInputs {
  ModelConfig config;
  int n_ctx = 0;
  std::vector<TokenizedCase> cases;
};
Result<EvalInputs> load_eval_inputs(const std::string& model_path, const ReuseCaseSet& set, int requested_ctx,
                                    int greedy_tokens);
// The same for a set of plain texts: each text tokenized as a prompt (BOS
// added, control tokens parsed), its first `ask_tokens` the ask and the rest,
// cut to the context, the reference continuation. A text of no more than
// ask_tokens + 1 tokens, or a context too short for the ask and
// greedy_tokens, is an error naming the case.
Result<EvalInputs> load_text_eval_inputs(const std::string& model_path, const EvictCaseSet& set, int requested_ctx,
                                         int ask_tokens, int greedy_tokens);

struct EvalRun {
  std::vector<int32_t> tokens;
  GenerationStats stats;
};

// One greedy request to completion on this thread: `options` says the reuse
// mode (and blend settings); generation is greedy and runs the whole
// max_tokens, so continuations compare position by position. With
// prompt_logprobs >= 0 the engine must return an entry per prompt token.
Result<EvalRun> run_request(Engine& engine, std::span<const int32_t> prompt, int max_tokens, GenerateOptions options,
                            int prompt_logprobs);

// Starts the next run from an empty cache. No scheduler loop runs during an
// evaluation, so this thread is the cache's only user, and every earlier
// request has released its blocks before generate() returned.
void clear_cache(Engine& engine);

// A full next-token distribution (log-probabilities, n_vocab of them) from a
// prompt-logprob entry that lists every token.
Result<std::vector<float>> dense_row(const PromptLogprob& entry, int n_vocab);

}  // namespace clm
