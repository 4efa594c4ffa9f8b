#include "eval_requests.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "model/gguf.h"

namespace clm {

int eval_context(int requested, const ModelConfig& config) {
  if (requested > 0) return requested;
  return config.n_ctx_train > 0 ? config.n_ctx_train : 4096;
}

std::string case_name(const ReuseCase& c, std::size_t i) { return "case " + std::to_string(i) + " (" + c.id + ")"; }

Result<std::vector<TokenizedCase>> tokenize_cases(const Tokenizer& tok, const ReuseCaseSet& set, int n_ctx,
                                                  int greedy_tokens) {
  std::vector<TokenizedCase> out;
  for (std::size_t i = 0; i < set.cases.size(); ++i) {
    const ReuseCase& c = set.cases[i];
    TokenizedCase t;
    // As `clmcache run` does: BOS added, control tokens in the text parsed.
    for (std::size_t k = 0; k < c.warm.size(); ++k) {
      auto ids = tok.encode(c.warm[k], /*add_special=*/c.warm_bos, /*parse_special=*/true);
      if (ids.empty()) return fail(case_name(c, i) + ": 'warm'[" + std::to_string(k) + "] has no tokens");
      if (static_cast<int>(ids.size()) > n_ctx)
        return fail(case_name(c, i) + ": 'warm'[" + std::to_string(k) + "] is " + std::to_string(ids.size()) +
                    " tokens, longer than the context of " + std::to_string(n_ctx));
      t.warm.push_back(std::move(ids));
    }
    t.ask = tok.encode(c.ask, true, true);
    if (t.ask.empty()) return fail(case_name(c, i) + ": 'ask' has no tokens");
    int continuation = greedy_tokens;
    if (c.reference) {
      t.reference = tok.encode(*c.reference, /*add_special=*/false, /*parse_special=*/false);
      if (t.reference->empty()) return fail(case_name(c, i) + ": 'reference' has no tokens");
      continuation = std::max(continuation, static_cast<int>(t.reference->size()));
    }
    if (static_cast<int>(t.ask.size()) + continuation > n_ctx)
      return fail(case_name(c, i) + ": 'ask' is " + std::to_string(t.ask.size()) + " tokens; with a " +
                  std::to_string(continuation) + "-token continuation it is longer than the context of " +
                  std::to_string(n_ctx));
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// The model's shape and tokenizer, and the context the evaluation runs at;
// `tokenize` then fills the cases.
template <class Tokenize>
Result<EvalInputs> load_inputs(const std::string& model_path, int requested_ctx, Tokenize tokenize) {
  auto file = GgufFile::open(model_path);
  if (!file) return std::unexpected(file.error());
  auto config = read_model_config(*file);
  if (!config) return std::unexpected(config.error());
  auto tokenizer = Tokenizer::from_gguf(*file);
  if (!tokenizer) return std::unexpected(tokenizer.error());
  EvalInputs in;
  in.config = *config;
  in.n_ctx = eval_context(requested_ctx, *config);
  auto cases = tokenize(**tokenizer, in.n_ctx);
  if (!cases) return std::unexpected(cases.error());
  in.cases = std::move(*cases);
  return in;
}

}  // namespace

Result<EvalInputs> load_eval_inputs(const std::string& model_path, const ReuseCaseSet& set, int requested_ctx,
                                    int greedy_tokens) {
  return load_inputs(model_path, requested_ctx, [&](const Tokenizer& tok, int n_ctx) {
    return tokenize_cases(tok, set, n_ctx, greedy_tokens);
  });
}

Result<EvalInputs> load_text_eval_inputs(const std::string& model_path, const EvictCaseSet& set, int requested_ctx,
                                         int ask_tokens, int greedy_tokens) {
  auto tokenize = [&](const Tokenizer& tok, int n_ctx) -> Result<std::vector<TokenizedCase>> {
    if (ask_tokens < 1) return fail("the ask of a text case must be at least 1 token");
    if (ask_tokens + greedy_tokens > n_ctx)
      return fail("an ask of " + std::to_string(ask_tokens) + " tokens with a " + std::to_string(greedy_tokens) +
                  "-token continuation is longer than the context of " + std::to_string(n_ctx));
    std::vector<TokenizedCase> out;
    for (std::size_t i = 0; i < set.cases.size(); ++i) {
      std::vector<int32_t> ids = tok.encode(set.cases[i].text, /*add_special=*/true, /*parse_special=*/true);
      if (static_cast<int>(ids.size()) <= ask_tokens + 1)
        return fail("case " + std::to_string(i) + " (" + set.cases[i].id + "): its text is " +
                    std::to_string(ids.size()) + " tokens, too few for an ask of " + std::to_string(ask_tokens));
      ids.resize(std::min(ids.size(), static_cast<std::size_t>(n_ctx - 1)));  // as a prompt must fit: below the context
      TokenizedCase t;
      const auto split = ids.begin() + ask_tokens;
      t.ask.assign(ids.begin(), split);
      t.reference = std::vector<int32_t>(split, ids.end());
      out.push_back(std::move(t));
    }
    return out;
  };
  return load_inputs(model_path, requested_ctx, tokenize);
}

Result<EvalRun> run_request(Engine& engine, std::span<const int32_t> prompt, int max_tokens, GenerateOptions g,
                            int prompt_logprobs) {
  g.max_tokens = max_tokens;
  g.stop_at_end_of_generation = false;  // a fixed length, so continuations compare position by position
  g.sampler.temperature = 0.0f;
  g.prompt_logprobs = prompt_logprobs;
  EvalRun run;
  auto stats = engine.generate(prompt, g, [&run](const GeneratedToken& t) {
    run.tokens.push_back(t.id);
    return true;
  });
  if (!stats) return std::unexpected(stats.error());
  run.stats = std::move(*stats);
  if (prompt_logprobs >= 0 && run.stats.prompt_logprobs.size() != prompt.size())
    return fail("the engine returned " + std::to_string(run.stats.prompt_logprobs.size()) +
                " prompt logprobs for a prompt of " + std::to_string(prompt.size()) +
                " tokens (does this build fill Request::prompt_logprobs?)");
  return run;
}

void clear_cache(Engine& engine) { engine.clear_cached(); }

Result<std::vector<float>> dense_row(const PromptLogprob& entry, int n_vocab) {
  if (static_cast<int>(entry.top.size()) != n_vocab)
    return fail("a prompt-logprob entry lists " + std::to_string(entry.top.size()) + " tokens, not all " +
                std::to_string(n_vocab));
  std::vector<float> row(static_cast<std::size_t>(n_vocab), -std::numeric_limits<float>::infinity());
  for (const auto& [id, lp] : entry.top) {
    if (id < 0 || id >= n_vocab) return fail("a prompt-logprob entry names token " + std::to_string(id));
    row[static_cast<std::size_t>(id)] = lp;
  }
  return row;
}

}  // namespace clm
