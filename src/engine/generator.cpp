#include "engine/generator.h"

#include <chrono>

#include "cache/block_table.h"
#include "model/logprobs.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Releases the sequence's blocks however generation ends.
struct TableGuard {
  BlockTable& table;
  KvPool& pool;
  ~TableGuard() { table.release(pool); }
};

}  // namespace

Result<GenerationStats> Generator::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                            const std::function<bool(const GeneratedToken&)>& on_token) {
  if (prompt.empty()) return fail("generate: the prompt has no tokens");
  if (options.prefill_chunk <= 0) return fail("generate: prefill chunk must be positive");
  const int n_vocab = model_.config().n_vocab;
  for (int32_t t : prompt)
    if (t < 0 || t >= n_vocab) return fail("generate: prompt token " + std::to_string(t) + " out of range");

  const auto t0 = Clock::now();
  GenerationStats stats;
  stats.prompt_tokens = static_cast<int>(prompt.size());
  BlockTable table(pool_.geometry().block_size);
  TableGuard guard{table, pool_};
  if (auto ok = table.reserve(pool_, static_cast<int>(prompt.size())); !ok)
    return fail("generate: the prompt (" + std::to_string(prompt.size()) + " tokens) does not fit the context: " +
                ok.error().message);

  std::vector<float> logits(static_cast<std::size_t>(n_vocab));
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  Batch batch;
  auto run = [&]() -> Status {
    const KvSeqView seq = table.view();
    const KvView view{pool_.geometry(), std::span<const KvSeqView>(&seq, 1)};
    return model_.forward(batch, view, logits, threads_);
  };

  // Prefill: only the last prompt token needs logits.
  const int n_prompt = static_cast<int>(prompt.size());
  for (int begin = 0; begin < n_prompt; begin += options.prefill_chunk) {
    const int end = std::min(n_prompt, begin + options.prefill_chunk);
    batch.clear();
    for (int i = begin; i < end; ++i) batch.add(prompt[static_cast<std::size_t>(i)], i, 0, table.append(prompt[static_cast<std::size_t>(i)], i), i == n_prompt - 1);
    if (auto ok = run(); !ok) return std::unexpected(ok.error());
  }
  stats.prefill_s = seconds_since(t0);

  Sampler sampler(options.sampler);
  const auto decode_t0 = Clock::now();
  stats.stop_reason = "length";
  for (int step = 0; step < options.max_tokens; ++step) {
    GeneratedToken out;
    if (options.top_logprobs > 0) out.top_logprobs = top_logprobs(logits, options.top_logprobs);
    std::vector<float> raw;
    if (options.top_logprobs > 0) raw = logits;  // the sampler may edit logits in place
    out.id = sampler.sample(logits, history);
    out.logprob = options.top_logprobs > 0 ? token_logprob(raw, out.id) : 0.0f;
    if (step == 0) stats.time_to_first_token_s = seconds_since(t0);
    ++stats.generated_tokens;
    history.push_back(out.id);
    const bool end = options.stop_at_end_of_generation && model_.tokenizer().is_end_of_generation(out.id);
    if (!on_token(out)) {
      stats.stop_reason = "cancelled";
      break;
    }
    if (end) {
      stats.stop_reason = "stop";
      break;
    }
    if (step + 1 == options.max_tokens) break;
    if (!table.reserve(pool_, 1)) {
      stats.stop_reason = "length";  // context full
      break;
    }
    const int32_t pos = static_cast<int32_t>(history.size()) - 1;
    batch.clear();
    batch.add(out.id, pos, 0, table.append(out.id, pos), true);
    if (auto ok = run(); !ok) return std::unexpected(ok.error());
  }
  stats.decode_s = seconds_since(decode_t0);
  return stats;
}

}  // namespace clm
